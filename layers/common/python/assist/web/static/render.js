// How an answer is shown, for the chat page (/static/render.js) and the widget (inside /widget.js): the route
// badge, the streamed text, "not in the docs", the degraded notices, the sources with their links and the
// feedback controls (ADR 0087). Plain DOM, text always set as text, never as HTML.
"use strict";

const AssistRender = (() => {
  const ANSWERED_FROM = {
    en: {
      passages: "quotes the best documentation passages",
      manifest: "lists the documents from the index's own list of them (its manifest)",
      conversation: "recaps this conversation",
      account_data: "lists the account facts it was given",
    },
    es: {
      passages: "cita los pasajes más relevantes de la documentación",
      manifest: "enumera los documentos a partir de la lista del propio índice (su manifiesto)",
      conversation: "resume esta conversación",
      account_data: "enumera los datos de la cuenta que recibió",
    },
  };
  const EN = {
    routing: "routing…",
    notInDocs: "Not in the docs",
    askAnyway: "Ask anyway",
    sources: "Sources",
    nearMisses: "Nearest sections in the docs",
    helpful: "Helpful",
    notHelpful: "Not helpful",
    openPage: "open page ↗",
    noModel: "no model answered",
    slot: "slot",
    confidence: "retrieval confidence",
    saving: "Saving…",
    saved: "Thanks, saved",
    savedType: "Saved: should have been ",
    notSaved: "Not saved: ",
    failed: "The answer could not be completed: ",
    notAnswered: "not answered",
    stopped: "the answer stopped before it was complete",
    complete: "Answer complete.",
    instead: (from) => `this answer ${from} instead of a written reply`,
    withoutOne: "this answer was written without one",
    unknown: (code) => `Something did not work as designed (${code}).`,
    degraded: {
      llm_unavailable: (w) => `No language model was reachable, so ${w}.`,
      llm_timeout: (w) => `The language model took too long, so ${w}.`,
      deadline: (w) => `There was no time left in this request for the language model, so ${w}.`,
      budget: (w) => `This site's daily allowance of written answers is used up, so ${w}.`,
      slot_fallback: "The light model was unreachable; the main model answered instead.",
      embedder_timeout: "The meaning-based search was too slow; only the keyword search ran.",
      embedder_unavailable: "The meaning-based search was unavailable; only the keyword search ran.",
      index_unavailable: "The documentation index could not be read, so this answer has no documentation passages.",
      index_timeout: "The documentation search took too long, so this answer has no documentation passages.",
      client_disconnected: "This answer was interrupted before it finished (the page was closed or reloaded).",
    },
  };
  const ES = {
    ...EN,
    routing: "clasificando…",
    notInDocs: "No está en la documentación",
    askAnyway: "Preguntar de todos modos",
    sources: "Fuentes",
    nearMisses: "Secciones más cercanas en la documentación",
    helpful: "Útil",
    notHelpful: "No es útil",
    openPage: "abrir página ↗",
    noModel: "sin modelo",
    slot: "ranura",
    confidence: "confianza de la búsqueda",
    saving: "Guardando…",
    saved: "Gracias, guardado",
    savedType: "Guardado: debería haber sido ",
    notSaved: "No se guardó: ",
    failed: "No se pudo completar la respuesta: ",
    notAnswered: "sin respuesta",
    stopped: "la respuesta se detuvo antes de terminar",
    complete: "Respuesta completa.",
    instead: (from) => `esta respuesta ${from} en lugar de una respuesta redactada`,
    withoutOne: "esta respuesta se escribió sin él",
    unknown: (code) => `Algo no funcionó como debía (${code}).`,
    degraded: {
      llm_unavailable: (w) => `No se pudo contactar con ningún modelo de lenguaje, así que ${w}.`,
      llm_timeout: (w) => `El modelo de lenguaje tardó demasiado, así que ${w}.`,
      deadline: (w) => `No quedaba tiempo en esta petición para el modelo de lenguaje, así que ${w}.`,
      budget: (w) => `Este sitio agotó por hoy sus respuestas redactadas, así que ${w}.`,
      slot_fallback: "El modelo ligero no respondía; respondió el modelo principal.",
      embedder_timeout: "La búsqueda por significado fue demasiado lenta; solo se buscó por palabras.",
      embedder_unavailable: "La búsqueda por significado no estaba disponible; solo se buscó por palabras.",
      index_unavailable: "No se pudo leer el índice de la documentación: esta respuesta no tiene pasajes.",
      index_timeout: "La búsqueda en la documentación tardó demasiado: esta respuesta no tiene pasajes.",
      client_disconnected: "Esta respuesta se interrumpió antes de terminar (se cerró o recargó la página).",
    },
  };
  const STRINGS = { en: EN, es: ES };
  // A stored turn has no trace; its type tells where only one kind of answer is possible.
  const FROM_TYPE = { CONVERSATIONAL: "conversation", PLATFORM: "account_data" };
  const SLOT = { RETRIEVAL: "main", CODE_GENERATION: "main", CONVERSATIONAL: "light", PLATFORM: "light" };

  /** The first of the reader's languages that has strings (navigator.languages), else English. */
  function language(preferred) {
    for (const tag of preferred || []) {
      const base = String(tag).toLowerCase().split("-")[0];
      if (STRINGS[base]) return base;
    }
    return "en";
  }

  const $ = (selector, root) => root.querySelector(selector);

  function element(tag, text, className) {
    return h(tag, { textContent: text ?? "", className: className || "" });
  }

  /** An element with these properties (attributes for `role` and names with a dash: aria-*, data-*) and children. */
  function h(tag, props = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props)) {
      if (name === "role" || name.includes("-")) node.setAttribute(name, value);
      else node[name] = value;
    }
    node.append(...children);
    return node;
  }

  /** A 24×24 icon drawn by one SVG path, hidden from assistive technology (its button has the label). */
  function icon(d) {
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("aria-hidden", "true");
    const path = document.createElementNS(ns, "path");
    path.setAttribute("d", d);
    svg.append(path);
    return svg;
  }

  const thumb = (className, label, d) =>
    h("button", { type: "button", className, title: label, "aria-label": label, "aria-pressed": "false" }, icon(d));

  /** A question and its (empty) answer, as the list item both pages append. `askAgain()`: what "Ask anyway" does
   * (the question again with force_answer); without it the button never shows. */
  function turn(message, key, t, askAgain) {
    const badge = h("div", { className: "badge" }, ...["type", "layer", "slot", "reason"].map((c) => element("span", "", c)));
    badge.firstChild.textContent = t.routing;
    const answer = h(
      "article",
      { className: "answer", "data-state": "routing", "aria-busy": "true", text: "", strings: t, askAgain },
      badge,
      h("p", { className: "uncertain", role: "note", hidden: true, textContent: t.notInDocs }),
      h("button", { className: "ask-anyway quiet", type: "button", hidden: true, textContent: t.askAnyway }),
      element("div", "", "text"),
      element("ul", "", "degraded"),
      h(
        "section",
        { className: "sources", hidden: true },
        h("h2", {}, element("span", t.sources, "title"), " ", element("span", "", "confidence")),
        h("ol"),
      ),
      h(
        "div",
        { className: "feedback", hidden: true },
        thumb("up", t.helpful, "M2 10h4v11H2zM8 21V10l5-8c1.7 0 2.6 1.1 2.2 2.7L14.3 9H20c1.2 0 2.1 1.1 1.9 2.3l-1.4 8A2 2 0 0 1 18.5 21z"),
        thumb("down", t.notHelpful, "M22 14h-4V3h4zM16 3v11l-5 8c-1.7 0-2.6-1.1-2.2-2.7L9.7 15H4c-1.2 0-2.1-1.1-1.9-2.3l1.4-8A2 2 0 0 1 5.5 3z"),
        h("span", { className: "saved", "aria-live": "polite" }),
      ),
    );
    return h("li", { className: "turn", lang: t === ES ? "es" : "en", "data-key": key }, element("p", message, "question"), answer);
  }

  // ------------------------------------------------------------------------------------ the stream

  // Server-Sent Events over fetch (EventSource cannot POST): blocks end with a blank line.
  async function readEvents(body, onEvent) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.search(/\r\n\r\n|\n\n|\r\r/)) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 4 : 2));
        let name = "message";
        const data = [];
        for (const line of block.split(/\r\n|\n|\r/)) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) onEvent(name, JSON.parse(data.join("\n")));
      }
    }
  }

  /** Render a streamed answer into `node` from a `/v1/ask/stream` response; resolves to the `done` event and when
   * the route and the first token came. `repaint()` runs before each repaint of the text and returns what to run
   * after it (the page keeps following the answer if the reader was at its end). */
  async function play(node, response, { started = performance.now(), repaint = () => () => {} } = {}) {
    const answer = $(".answer", node);
    const timings = {};
    let result = null;
    await readEvents(response.body, (name, data) => {
      if (name === "route") {
        timings.route = performance.now() - started;
        showRoute(node, { ...data, model: "" }); // no model has answered yet: `done` names the one that did
        showSources(node, data.sources, null);
        showDegraded(node, data.degraded);
        showUncertain(node, data);
        answer.dataset.state = "streaming";
      } else if (name === "token") {
        timings.firstToken ??= performance.now() - started;
        appendText(node, data.text, repaint);
      } else if (name === "done") {
        finish(node, data);
        result = { done: data, timings };
      } else if (name === "error") {
        throw new Error(data.detail);
      }
    });
    if (!result) throw new Error(answer.strings.stopped);
    return result;
  }

  function finish(node, done) {
    const answer = $(".answer", node);
    answer.text = done.answer;
    renderText(node);
    showRoute(node, done.route);
    const generate = (done.trace.stages || []).find((stage) => stage.name === "generate");
    // the route names the model it asked for; when none answered, the badge must not say it did
    if (generate && generate.answered_by === "extractive") $(".slot", node).textContent = answer.strings.noModel;
    showDegraded(node, done.degraded, generate && generate.answered_from, generate && generate.lang);
    showUncertain(node, done);
    showSources(node, null, done.retrieval);
    settle(node, done.turn);
  }

  function settle(node, number) {
    const answer = $(".answer", node);
    answer.dataset.turn = number;
    $(".feedback", node).hidden = false;
    answer.dataset.state = "done";
    answer.setAttribute("aria-busy", "false");
  }

  function fail(node, detail) {
    const answer = $(".answer", node);
    answer.dataset.state = "failed";
    answer.setAttribute("aria-busy", "false");
    const notice = element("p", answer.strings.failed + detail, "error");
    $(".text", node).after(notice);
    if (!$(".type", node).dataset.type) $(".type", node).textContent = answer.strings.notAnswered;
    return notice.textContent;
  }

  /** A turn read back from the transcript (GET /v1/sessions/{id}): no trace, sources by chunk id. */
  function stored(node, turn, intent) {
    showRoute(node, {
      type: turn.type,
      layer: intent ? intent.layer : "",
      confidence: intent ? intent.confidence : null,
      model_slot: SLOT[turn.type],
    });
    $(".answer", node).text = turn.answer;
    renderText(node);
    showDegraded(node, turn.degraded);
    showSources(node, turn.sources.map((id) => ({ id })), null);
    settle(node, turn.turn);
    if (turn.feedback) showFeedback(node, turn.feedback);
  }

  // ------------------------------------------------------------------------------------ the parts

  function showRoute(node, route) {
    if (!route) return;
    const type = $(".type", node);
    type.textContent = route.type;
    type.dataset.type = route.type;
    const confidence = typeof route.confidence === "number" ? ` · ${Math.round(route.confidence * 100)}%` : "";
    $(".layer", node).textContent = route.layer ? route.layer + confidence : "";
    const slot = `${route.model_slot} ${$(".answer", node).strings.slot}`;
    $(".slot", node).textContent = slot + (route.model ? " · " + route.model : "");
    $(".reason", node).textContent = route.reason || "";
  }

  function appendText(node, text, repaint) {
    const answer = $(".answer", node);
    answer.text += text;
    if (!answer.pending) {
      answer.pending = true; // one render per frame, however fast the tokens come
      requestAnimationFrame(() => {
        answer.pending = false;
        const after = repaint();
        renderText(node);
        after();
      });
    }
  }

  // A small, safe subset of Markdown, built as DOM nodes (never as HTML): ``` fences, `code`,
  // **bold**, and [n] citations that open the n-th source.
  function renderText(node) {
    const text = $(".answer", node).text;
    const parts = [];
    // a fence opens at a line's start and ends at its closing fence; one left open ends with its passage (the next
    // "[n] " line of an answer without a model) or the text, never taking the passages after it into its block
    const fence = /^```[^\n]*\n?([\s\S]*?)(?:^```[ \t]*$|(?=^\[\d{1,2}\] )|(?![\s\S]))/gm;
    let at = 0;
    for (const m of text.matchAll(fence)) {
      parts.push(prose(text.slice(at, m.index), node));
      at = m.index + m[0].length;
      if (!m[1].trim()) continue; // a fence still opening, or cut off by a recap
      const pre = element("pre");
      pre.tabIndex = 0;
      pre.append(element("code", m[1]));
      parts.push(pre);
    }
    parts.push(prose(text.slice(at), node));
    $(".text", node).replaceChildren(...parts);
  }

  function prose(part, node) {
    const p = element("p");
    const text = part.replace(/^\n+|\n+$/g, ""); // the blank lines around a code block are its margins
    const inline = /`([^`\n]+)`|\*\*([^*\n]+)\*\*|\[([^\]\n]+)\]\((https?:\/\/[^\s)]+|[\w./-]+(?:#[\w.-]*)?)\)|\[(\d{1,2})\]/g;
    let at = 0;
    for (const m of text.matchAll(inline)) {
      p.append(text.slice(at, m.index));
      if (m[1] !== undefined) p.append(element("code", m[1]));
      else if (m[2] !== undefined) p.append(element("strong", m[2]));
      else if (m[3] !== undefined) p.append(pageLink(m[3], m[4], node)); // a near miss's page (ADR 0084)
      else p.append(citation(node, Number(m[5])));
      at = m.index + m[0].length;
    }
    p.append(text.slice(at));
    return p;
  }

  function citation(node, n) {
    const link = element("a", `[${n}]`, "cite");
    link.href = `#src-${node.dataset.key}-${n}`;
    link.addEventListener("click", (event) => {
      const source = node.querySelector(`[data-n="${n}"]`);
      if (!source) return;
      event.preventDefault(); // the address's hash is the page's own (the chat's session, a host page's anchor)
      const details = $("details", source);
      if (details) details.open = true;
      source.scrollIntoView({ block: "nearest", behavior: "smooth" });
      $("summary, span", source).focus();
    });
    return link;
  }

  // Sources from the route event carry their passage; a stored turn keeps only the chunk ids. An answer that says
  // the docs do not cover the question lists what the search found as near misses (ADR 0102), under their own title.
  function showSources(node, sources, retrieval) {
    const section = $(".sources", node);
    const t = $(".answer", node).strings;
    if (retrieval) $(".confidence", section).textContent = `· ${t.confidence} ${retrieval.confidence.replace("_", " ")}`;
    if (!sources) return;
    const near = sources.some((source) => source.near_miss);
    section.classList.toggle("near-misses", near);
    $(".title", section).textContent = near ? t.nearMisses : t.sources;
    $("ol", section).replaceChildren(
      ...sources.map((source, i) => {
        const item = element("li", "", source.near_miss ? "near-miss" : "");
        item.id = `src-${node.dataset.key}-${i + 1}`;
        item.dataset.n = i + 1;
        if (source.passage === undefined) {
          const label = element("span", chunkLabel(source.id));
          label.tabIndex = -1;
          item.append(label);
          return item;
        }
        const details = element("details");
        details.append(element("summary", sectionName(source)), element("p", unwrap(source.passage), "passage"));
        item.append(details);
        if (source.url) item.append(sourceLink(source.url, t));
        return item;
      }),
    );
    section.hidden = sources.length === 0;
  }

  // "Page › section"; a section without heading text (a page's opening) is its page's title alone.
  function sectionName(source) {
    const heading = (source.heading || "").trim();
    return heading && heading !== source.title.trim() ? `${source.title} › ${heading}` : source.title;
  }

  // The page the passage comes from, opened beside the chat (ADR 0059). A folder indexed without a base URL
  // gives its path in the folder instead (ADR 0112): shown as the place to look, not linked (no page to open).
  function sourceLink(url, t) {
    if (!/^https?:\/\//.test(url)) {
      const path = element("span", url, "source-path");
      path.title = url;
      return path;
    }
    const link = element("a", t.openPage, "source-link");
    link.href = url;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    link.title = url;
    return link;
  }

  // A Markdown link in the answer (only an http(s) page or a path in the docs folder: never a script), opened
  // like a source's page; a path shows the link's text, the path on hover.
  function pageLink(text, url, node) {
    const link = sourceLink(url, $(".answer", node).strings);
    link.textContent = text;
    return link;
  }

  // Passages keep their Markdown's hard line breaks; join the lines of a paragraph so it reflows to any
  // width, but keep breaks before lists, headings, tables, quotes and code.
  function unwrap(text) {
    let out = "";
    let code = false;
    let previous = "";
    for (const line of text.split("\n")) {
      const fence = /^\s*```/.test(line);
      const joins = out && !code && !fence && previous.trim() && line.trim() && !/^([-*#|>\s]|\d+[.)] )/.test(line);
      out += (out ? (joins ? " " : "\n") : "") + line;
      if (fence) code = !code;
      previous = fence ? "" : line;
    }
    return out;
  }

  function chunkLabel(id) {
    // `<doc_id>#<heading-path-slug>:<ordinal>` read aloud: "routing › how the engine decides …"
    const [doc, slug = ""] = id.split("#");
    return slug ? `${doc} › ${slug.replace(/:\d+$/, "").replace(/[-/]+/g, " ")}` : doc;
  }

  // An answer that says the docs do not cover the question carries a visible notice, with why.
  // The evidence's verdict can be overruled: "Ask anyway" sends the question again with force_answer; the
  // model's own verdict (model_not_covered) already comes from the model, so it has no such button.
  function showUncertain(node, { uncertain, uncertain_reason: reason }) {
    const badge = $(".uncertain", node);
    badge.hidden = !uncertain;
    badge.title = uncertain ? (reason || "").replaceAll("_", " ") : "";
    if (uncertain) badge.dataset.reason = reason || "";
    const again = $(".ask-anyway", node);
    const { askAgain } = $(".answer", node);
    again.hidden = !uncertain || reason === "model_not_covered" || !askAgain;
    again.onclick = () => {
      if (askAgain()) again.hidden = true; // false: the page is still busy with another answer
    };
  }

  // `from`: what an answer without a model is made of, and `lang` the language it is written in, when the
  // trace says them (a live answer): the notice speaks the answer's language.
  function showDegraded(node, reasons, from, lang) {
    const t = STRINGS[lang] || $(".answer", node).strings;
    const made = from || FROM_TYPE[$(".type", node).dataset.type];
    const words = (ANSWERED_FROM[t === ES ? "es" : "en"] || {})[made];
    const how = words ? t.instead(words) : t.withoutOne;
    $(".degraded", node).replaceChildren(
      ...(reasons || []).map((code) => {
        const said = t.degraded[code];
        const item = element("li", typeof said === "function" ? said(how) : said || t.unknown(code));
        item.dataset.code = code;
        if (lang) item.lang = lang;
        return item;
      }),
    );
  }

  // ------------------------------------------------------------------------------------ feedback

  /** 👍/👎 (and the chat page's type list) send `post(turn, feedback)`, a fetch's promise. */
  function wireFeedback(node, post) {
    const box = $(".feedback", node);
    const select = $("select", box);
    const send = async (feedback) => {
      const t = $(".answer", node).strings;
      const note = $(".saved", box);
      note.textContent = t.saving;
      const response = await post($(".answer", node).dataset.turn, feedback);
      if (!response.ok) {
        note.textContent = t.notSaved + (await problem(response));
        return;
      }
      showFeedback(node, feedback);
      note.textContent = feedback.type ? t.savedType + feedback.type : t.saved;
    };
    $(".up", box).addEventListener("click", () => {
      if (select) select.value = "";
      send({ rating: "up" });
    });
    $(".down", box).addEventListener("click", () =>
      send({ rating: "down", ...(select && select.value ? { type: select.value } : {}) }),
    );
    if (select) {
      select.addEventListener("change", () => {
        if (select.value) send({ rating: "down", type: select.value });
      });
    }
  }

  function showFeedback(node, feedback) {
    const box = $(".feedback", node);
    box.dataset.rating = feedback.rating;
    $(".up", box).setAttribute("aria-pressed", String(feedback.rating === "up"));
    $(".down", box).setAttribute("aria-pressed", String(feedback.rating === "down"));
    const select = $("select", box);
    if (select) select.value = feedback.type || "";
  }

  /** The `detail` of an error reply, or its status. */
  async function problem(response) {
    try {
      const body = await response.json();
      return body.detail || `HTTP ${response.status}`;
    } catch {
      return `HTTP ${response.status}`;
    }
  }

  return { STRINGS, language, h, icon, turn, play, fail, stored, wireFeedback, problem };
})();
