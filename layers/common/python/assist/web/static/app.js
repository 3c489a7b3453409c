// The web chat of the assistance engine. Plain JavaScript, no build step, no third-party code:
// it calls the same origin's API (POST /v1/ask/stream, GET /v1/sessions/{id}, POST …/feedback).
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const SESSION_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;
const SLOT = { RETRIEVAL: "main", CODE_GENERATION: "main", CONVERSATIONAL: "light", PLATFORM: "light" };
// What an answer written without a model is made of: the `generate` stage's `answered_from` (docs/api.md).
const ANSWERED_FROM = {
  passages: "quotes the best documentation passages",
  manifest: "lists the documents from the index's own list of them (its manifest)",
  conversation: "recaps this conversation",
  account_data: "lists the account facts it was given",
};
// A stored turn has no trace; its type tells where only one kind of answer is possible.
const FROM_TYPE = { CONVERSATIONAL: "conversation", PLATFORM: "account_data" };
const withoutModel = (from) =>
  ANSWERED_FROM[from] ? `this answer ${ANSWERED_FROM[from]} instead of a written reply` : "this answer was written without one";
// The `degraded` reasons of docs/api.md, in plain words.
const DEGRADED = {
  llm_unavailable: (from) => `No language model was reachable, so ${withoutModel(from)}.`,
  llm_timeout: (from) => `The language model took too long, so ${withoutModel(from)}.`,
  deadline: (from) => `There was no time left in this request for the language model, so ${withoutModel(from)}.`,
  slot_fallback: "The light model was unreachable; the main model answered instead.",
  embedder_timeout: "The meaning-based search was too slow; only the keyword search ran.",
  embedder_unavailable: "The meaning-based search was unavailable; only the keyword search ran.",
  index_unavailable: "The documentation index could not be read, so this answer has no documentation passages.",
  index_timeout: "The documentation search took too long, so this answer has no documentation passages.",
  client_disconnected: "This answer was interrupted before it finished (the page was closed or reloaded).",
  retrieve_failed: "The documentation search kept failing, so this answer has no documentation passages.",
  classify_failed: "The message could not be classified. Please send it again.",
  answer_failed: "The answer could not be written. Please send it again.",
};

const saved = {
  get: (key) => { try { return localStorage.getItem(key); } catch { return null; } },
  set: (key, value) => { try { localStorage.setItem(key, value); } catch { /* private mode: not kept */ } },
};

let session = null;
let fresh = false; // a session this page made up and nobody has asked in yet: the server has no history of it
let busy = false;

// ---------------------------------------------------------------------------------------- sessions

function newSessionId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

function sessionInHash() {
  const id = decodeURIComponent(location.hash.replace(/^#session=/, ""));
  return location.hash.startsWith("#session=") && SESSION_PATTERN.test(id) ? id : null;
}

async function openSession(id, { push = false, isNew = false } = {}) {
  session = id;
  fresh = isNew;
  saved.set("assist.session", id);
  if (sessionInHash() !== id) {
    // a new chat is a new history entry, so Back returns to the conversation before it
    history[push ? "pushState" : "replaceState"](null, "", "#session=" + encodeURIComponent(id));
  }
  $("#session").textContent = "Session " + id;
  $("#log").replaceChildren();
  if (!fresh) await loadTranscript();
  $("#empty").hidden = $("#log").children.length > 0;
}

async function loadTranscript() {
  const response = await call("GET", `/v1/sessions/${encodeURIComponent(session)}`);
  if (response.status === 404) return; // a new session, or another user's: nothing to show
  if (!response.ok) {
    announce("The conversation could not be loaded: " + (await problem(response)));
    return;
  }
  const transcript = await response.json();
  const intents = new Map(transcript.intents.map((i) => [i.turn, i]));
  for (const turn of transcript.turns) showStoredTurn(turn, intents.get(turn.turn));
}

// ---------------------------------------------------------------------------------------- HTTP

function user() {
  const field = $("#user");
  return field.value.trim() && field.checkValidity() ? field.value.trim() : "";
}

function call(method, path, body) {
  // On the local stack the name is the caller (X-Assist-User); elsewhere the identity comes with the
  // request itself (the same origin's credentials), and the server ignores the header.
  const headers = { "content-type": "application/json" };
  if (user()) headers["x-assist-user"] = user();
  return fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function problem(response) {
  try {
    const body = await response.json();
    return body.detail || `HTTP ${response.status}`;
  } catch {
    return `HTTP ${response.status}`;
  }
}

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

// ---------------------------------------------------------------------------------------- asking

// `force`: the same question again, answered by the model whatever the evidence said ("ask anyway").
async function ask(message, force = false) {
  const node = addTurn(message);
  const answer = $(".answer", node);
  const started = performance.now();
  const timings = {};
  setBusy(true);
  fresh = false;
  try {
    const body = { session_id: session, message, ...(force ? { force_answer: true } : {}) };
    const response = await call("POST", "/v1/ask/stream", body);
    if (!response.ok) throw new Error(await problem(response));
    await readEvents(response.body, (name, data) => {
      if (name === "route") {
        timings.route = performance.now() - started;
        showRoute(node, data);
        showSources(node, data.sources, null);
        showDegraded(node, data.degraded);
        showUncertain(node, data);
        answer.dataset.state = "streaming";
      } else if (name === "token") {
        timings.firstToken ??= performance.now() - started;
        appendText(node, data.text);
      } else if (name === "done") {
        finish(node, data, timings);
      } else if (name === "error") {
        throw new Error(data.detail);
      }
    });
    if (answer.dataset.state !== "done") throw new Error("the answer stopped before it was complete");
  } catch (error) {
    fail(node, error.message);
  } finally {
    setBusy(false);
  }
}

function finish(node, done, timings) {
  const answer = $(".answer", node);
  answer.text = done.answer;
  renderText(node);
  showRoute(node, done.route);
  const generate = (done.trace.stages || []).find((stage) => stage.name === "generate");
  // the route names the model it asked for; when none answered, the badge must not say it did
  if (generate && generate.answered_by === "extractive") $(".slot", node).textContent = "no model answered";
  showDegraded(node, done.degraded, generate && generate.answered_from);
  showUncertain(node, done);
  showSources(node, null, done.retrieval);
  showTrace(node, done.trace, timings);
  answer.dataset.turn = done.turn;
  $(".feedback", node).hidden = false;
  answer.dataset.state = "done";
  answer.setAttribute("aria-busy", "false");
  announce("Answer complete.");
}

function fail(node, detail) {
  const answer = $(".answer", node);
  answer.dataset.state = "failed";
  answer.setAttribute("aria-busy", "false");
  const notice = document.createElement("p");
  notice.className = "error";
  notice.textContent = "The answer could not be completed: " + detail;
  $(".text", node).after(notice);
  if (!$(".type", node).dataset.type) $(".type", node).textContent = "not answered";
  announce(notice.textContent);
}

// ---------------------------------------------------------------------------------------- rendering

function addTurn(message) {
  const node = $("#turn").content.firstElementChild.cloneNode(true);
  node.dataset.key = String($("#log").children.length + 1);
  $(".question", node).textContent = message;
  $(".answer", node).text = "";
  wireFeedback(node);
  $("#log").append(node);
  $("#empty").hidden = true;
  node.scrollIntoView({ block: "start", behavior: "smooth" });
  return node;
}

function showStoredTurn(turn, intent) {
  const node = addTurn(turn.message);
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
  const answer = $(".answer", node);
  answer.dataset.turn = turn.turn;
  answer.setAttribute("aria-busy", "false");
  answer.dataset.state = "done";
  $(".feedback", node).hidden = false;
  if (turn.feedback) showFeedback(node, turn.feedback);
}

function showRoute(node, route) {
  if (!route) return;
  const type = $(".type", node);
  type.textContent = route.type;
  type.dataset.type = route.type;
  const confidence = typeof route.confidence === "number" ? ` · ${Math.round(route.confidence * 100)}%` : "";
  $(".layer", node).textContent = route.layer ? route.layer + confidence : "";
  $(".slot", node).textContent = `${route.model_slot} slot${route.model ? " · " + route.model : ""}`;
  $(".reason", node).textContent = route.reason || "";
}

function appendText(node, text) {
  const answer = $(".answer", node);
  answer.text += text;
  if (!answer.pending) {
    answer.pending = true; // one render per frame, however fast the tokens come
    requestAnimationFrame(() => {
      answer.pending = false;
      const follow = nearBottom();
      renderText(node);
      if (follow) scrollToEnd();
    });
  }
}

// A small, safe subset of Markdown, built as DOM nodes (never as HTML): ``` fences, `code`,
// **bold**, and [n] citations that open the n-th source.
function renderText(node) {
  const box = $(".text", node);
  const text = $(".answer", node).text;
  const parts = [];
  const fence = /```[^\n]*\n?([\s\S]*?)(?:```|$)/g;
  let at = 0;
  for (const m of text.matchAll(fence)) {
    parts.push(prose(text.slice(at, m.index), node));
    at = m.index + m[0].length;
    if (!m[1].trim()) continue; // a fence still opening, or cut off by a recap
    const pre = document.createElement("pre");
    pre.tabIndex = 0;
    const code = document.createElement("code");
    code.textContent = m[1];
    pre.append(code);
    parts.push(pre);
  }
  parts.push(prose(text.slice(at), node));
  box.replaceChildren(...parts);
}

function prose(part, node) {
  const p = document.createElement("p");
  const text = part.replace(/^\n+|\n+$/g, ""); // the blank lines around a code block are its margins
  const inline = /`([^`\n]+)`|\*\*([^*\n]+)\*\*|\[([^\]\n]+)\]\(((?:https?|file):\/\/[^\s)]+)\)|\[(\d{1,2})\]/g;
  let at = 0;
  for (const m of text.matchAll(inline)) {
    p.append(text.slice(at, m.index));
    if (m[1] !== undefined) p.append(element("code", m[1]));
    else if (m[2] !== undefined) p.append(element("strong", m[2]));
    else if (m[3] !== undefined) p.append(pageLink(m[3], m[4])); // a near miss's page (ADR 0084)
    else p.append(citation(node, Number(m[5])));
    at = m.index + m[0].length;
  }
  p.append(text.slice(at));
  return p;
}

function citation(node, n) {
  const link = element("a", `[${n}]`);
  link.className = "cite";
  link.href = `#src-${node.dataset.key}-${n}`;
  link.addEventListener("click", (event) => {
    const source = document.getElementById(link.hash.slice(1));
    if (!source) return;
    event.preventDefault(); // the URL's hash names the session
    const details = $("details", source);
    if (details) details.open = true;
    source.scrollIntoView({ block: "nearest", behavior: "smooth" });
    $("summary, span", source).focus();
  });
  return link;
}

// The page the passage comes from, opened beside the chat (ADR 0059).
function sourceLink(url) {
  const link = element("a", "open page ↗");
  link.href = url;
  link.className = "source-link";
  link.target = "_blank";
  link.rel = "noopener noreferrer";
  link.title = url;
  return link;
}

function pageLink(text, url) {
  const link = sourceLink(url);
  link.textContent = text;
  return link;
}

function element(tag, text) {
  const el = document.createElement(tag);
  el.textContent = text;
  return el;
}

// Sources from the route event carry their passage; a stored turn keeps only the chunk ids.
function showSources(node, sources, retrieval) {
  const section = $(".sources", node);
  if (retrieval) $(".confidence", section).textContent = `· retrieval confidence ${retrieval.confidence.replace("_", " ")}`;
  if (!sources) return;
  const list = $("ol", section);
  list.replaceChildren(
    ...sources.map((source, i) => {
      const item = document.createElement("li");
      item.id = `src-${node.dataset.key}-${i + 1}`;
      if (source.passage === undefined) {
        const label = element("span", chunkLabel(source.id));
        label.tabIndex = -1;
        item.append(label);
        return item;
      }
      const details = document.createElement("details");
      const summary = element("summary", `${source.title} › ${source.heading}`);
      details.append(summary, element("p", unwrap(source.passage)));
      $("p", details).className = "passage";
      item.append(details);
      if (source.url) item.append(sourceLink(source.url));
      return item;
    }),
  );
  section.hidden = sources.length === 0;
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
// The evidence's verdict can be overruled: "ask anyway" sends the question again with force_answer; the
// model's own verdict (model_not_covered) already comes from the model, so it has no such button.
function showUncertain(node, { uncertain, uncertain_reason: reason }) {
  const badge = $(".uncertain", node);
  badge.hidden = !uncertain;
  badge.title = uncertain ? (reason || "").replaceAll("_", " ") : "";
  if (uncertain) badge.dataset.reason = reason || "";
  const again = $(".ask-anyway", node);
  again.hidden = !uncertain || reason === "model_not_covered";
  again.onclick = () => {
    if (busy) return;
    again.hidden = true;
    ask($(".question", node).textContent, true);
  };
}

// `from`: what an answer without a model is made of, when the trace says it (a live answer).
function showDegraded(node, reasons, from) {
  const made = from || FROM_TYPE[$(".type", node).dataset.type];
  $(".degraded", node).replaceChildren(
    ...(reasons || []).map((code) => {
      const words = typeof DEGRADED[code] === "function" ? DEGRADED[code](made) : DEGRADED[code];
      const item = element("li", words || `Something did not work as designed (${code}).`);
      item.dataset.code = code;
      return item;
    }),
  );
}

// The stages ran one after another: each bar starts where the one before it ended.
function showTrace(node, trace, timings) {
  const stages = trace.stages || [];
  const total = Math.max(trace.total_ms || 0, stages.reduce((sum, s) => sum + s.ms, 0)) || 1;
  const section = $(".trace", node);
  const seen = [];
  if (timings.route !== undefined) seen.push(`route after ${ms(timings.route)}`);
  if (timings.firstToken !== undefined) seen.push(`first token after ${ms(timings.firstToken)}`);
  $(".total", section).textContent = `· ${ms(total)} on the server${seen.length ? "; here: " + seen.join(", ") : ""}`;
  let start = 0;
  $(".waterfall", section).replaceChildren(
    ...stages.map((stage) => {
      const row = document.createElement("li");
      const track = document.createElement("span");
      track.className = "track";
      const bar = document.createElement("span");
      bar.className = "fill";
      bar.dataset.stage = stage.name;
      bar.style.left = `${(100 * start) / total}%`;
      bar.style.width = `${Math.max((100 * stage.ms) / total, 0.5)}%`;
      track.append(bar);
      start += stage.ms;
      row.append(element("span", stage.name), track, element("span", ms(stage.ms)));
      row.title = `${stage.name}: ${ms(stage.ms)}`;
      return row;
    }),
  );
  section.hidden = stages.length === 0;
}

function ms(value) {
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${Math.round(value)} ms`;
}

// ---------------------------------------------------------------------------------------- feedback

function wireFeedback(node) {
  const box = $(".feedback", node);
  const select = $("select", box);
  $(".up", box).addEventListener("click", () => {
    select.value = "";
    sendFeedback(node, { rating: "up" });
  });
  $(".down", box).addEventListener("click", () =>
    sendFeedback(node, { rating: "down", ...(select.value ? { type: select.value } : {}) }),
  );
  select.addEventListener("change", () => {
    if (select.value) sendFeedback(node, { rating: "down", type: select.value });
  });
}

async function sendFeedback(node, feedback) {
  const turn = $(".answer", node).dataset.turn;
  const note = $(".saved", node);
  note.textContent = "Saving…";
  const response = await call("POST", `/v1/sessions/${encodeURIComponent(session)}/turns/${turn}/feedback`, feedback);
  if (!response.ok) {
    note.textContent = "Not saved: " + (await problem(response));
    return;
  }
  showFeedback(node, feedback);
  note.textContent = feedback.type ? `Saved: should have been ${feedback.type}` : "Thanks, saved";
}

function showFeedback(node, feedback) {
  const box = $(".feedback", node);
  box.dataset.rating = feedback.rating;
  $(".up", box).setAttribute("aria-pressed", String(feedback.rating === "up"));
  $(".down", box).setAttribute("aria-pressed", String(feedback.rating === "down"));
  $("select", box).value = feedback.type || "";
}

// ---------------------------------------------------------------------------------------- page

function nearBottom() {
  return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
}

function scrollToEnd() {
  window.scrollTo({ top: document.documentElement.scrollHeight });
}

function announce(text) {
  $("#status").textContent = text;
}

function setBusy(value) {
  busy = value;
  $("#send").disabled = value;
  $("#ask").setAttribute("aria-busy", String(value));
}

function send() {
  const field = $("#message");
  const message = field.value.trim();
  if (!message || busy) return;
  field.value = "";
  ask(message);
}

function start() {
  const field = $("#user");
  field.value = saved.get("assist.user") || "";
  field.addEventListener("change", () => {
    if (!field.checkValidity()) return;
    saved.set("assist.user", field.value.trim());
    openSession(session, { isNew: fresh }); // sessions belong to their user: show this user's view of it
  });
  $("#new").addEventListener("click", () => {
    openSession(newSessionId(), { push: true, isNew: true });
    $("#message").focus();
  });
  $("#ask").addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  $("#message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  window.addEventListener("hashchange", () => {
    const id = sessionInHash();
    if (id && id !== session) openSession(id);
  });
  const last = saved.get("assist.session");
  const known = sessionInHash() || (last && SESSION_PATTERN.test(last) ? last : null);
  openSession(known || newSessionId(), { isNew: !known });
  $("#message").focus();
}

start();
