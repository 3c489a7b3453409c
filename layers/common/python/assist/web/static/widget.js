// The widget: a launcher and a chat panel in a shadow root, on any site that adds
//   <script src="https://assist.example.com/widget.js" data-key="pk_…" defer></script>
// Served as one file (GET /widget.js) with render.js and the styles inside it, in one function scope, so the
// host page sees no global of ours (ADR 0087). It talks only to the engine that served it.

const WORDS = {
  en: {
    title: "Ask the docs",
    close: "Close",
    fresh: "New chat",
    message: "Your question",
    placeholder: "Ask a question… (Enter sends)",
    send: "Send",
    empty: "Ask anything about this documentation. Answers cite their sources.",
    wait: (s) => `Too many questions for now: try again in ${s} s.`,
    refused: "The assistant is not available on this site.",
    unreachable: "The assistant could not be reached from this page.",
  },
  es: {
    title: "Pregunta a la documentación",
    close: "Cerrar",
    fresh: "Nueva conversación",
    message: "Tu pregunta",
    placeholder: "Escribe una pregunta… (Intro la envía)",
    send: "Enviar",
    empty: "Pregunta lo que quieras sobre esta documentación. Las respuestas citan sus fuentes.",
    wait: (s) => `Demasiadas preguntas por ahora: vuelve a intentarlo en ${s} s.`,
    refused: "El asistente no está disponible en este sitio.",
    unreachable: "No se pudo contactar con el asistente desde esta página.",
  },
};

const script = document.currentScript || document.querySelector("script[data-key][src*='widget.js']");
const KEY = script.dataset.key || "";
const HOME = new URL(script.src, location.href).origin; // widget.js and /v1/widget/session
const BASE = STREAM_BASE || HOME; // the stream, the history and feedback (in AWS: the stream function's URL)
const LANG = script.dataset.lang || AssistRender.language(navigator.languages || [navigator.language]);
const T = { ...AssistRender.STRINGS[LANG], ...WORDS[LANG] };
const STORE = `assist.widget.${KEY}`;
const SCOPE = scopeOf(script.dataset, location.href);

// What the page's questions search (ADR 0121): `data-scope="product=cli,version=2"`, and for a dimension it leaves
// open a pattern on the page's address, `data-version-from="/v(\\d+)/"` (its first group), as in the sources file.
function scopeOf(data, address) {
  const out = {};
  for (const p of (data.scope || "").split(",")) {
    const [k, v] = p.split("=").map((s) => s.trim());
    if (v) out[k] = v; // an unknown key is sent as written: the engine refuses it with a 400 that names it
  }
  for (const k of ["product", "version"]) {
    const m = !out[k] && data[k + "From"] && address.match(data[k + "From"]);
    if (m?.[1]) out[k] = m[1];
  }
  return Object.keys(out)[0] ? out : undefined; // undefined: JSON leaves it out of the question
}

const kept = {
  get: () => { try { return JSON.parse(sessionStorage.getItem(STORE)) || {}; } catch { return {}; } },
  set: (value) => { try { sessionStorage.setItem(STORE, JSON.stringify(value)); } catch { /* not kept */ } },
};

// ------------------------------------------------------------------------------------------ the DOM

const { h } = AssistRender;
const host = h("div", { "data-assist-widget": "" });
const root = host.attachShadow({ mode: "open" });
const launcher = h(
  "button",
  { type: "button", className: "launcher", title: T.title, "aria-label": T.title, "aria-expanded": "false", "aria-controls": "assist-panel" },
  AssistRender.icon("M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm3 6v2h10V9zm0 4v2h7v-2z"),
);
const fresh = h("button", { type: "button", className: "quiet", textContent: T.fresh });
const close = h("button", { type: "button", className: "close", textContent: "×", title: T.close, "aria-label": T.close });
const log = h("ol", { className: "log", role: "log", "aria-live": "polite", "aria-label": T.title });
const empty = h("p", { className: "empty", textContent: T.empty });
const field = h("textarea", { id: "assist-message", rows: 2, maxLength: 8000, placeholder: T.placeholder });
const send = h("button", { type: "submit", textContent: T.send });
const form = h("form", { className: "composer" }, h("label", { htmlFor: field.id, className: "hidden", textContent: T.message }), field, send);
const status = h("p", { className: "hidden", role: "status" });
const panel = h(
  "div",
  { id: "assist-panel", className: "panel", hidden: true, role: "dialog", "aria-modal": "true", "aria-labelledby": "assist-title" },
  h("header", {}, h("h2", { id: "assist-title", textContent: T.title }), fresh, close),
  h("div", { className: "scroll" }, empty, log),
  form,
  status,
);
const frame = h("div", { className: "w", lang: LANG }, launcher, panel);
root.append(h("style", { textContent: STYLE }), frame);

// ------------------------------------------------------------------------------------------ theme

// data-theme wins; else the host page's own: a dark marker on <html>, its background, or the system's.
function dark() {
  const wanted = script.dataset.theme;
  if (wanted === "dark" || wanted === "light") return wanted === "dark";
  const html = document.documentElement;
  const marker = (html.dataset.theme || html.dataset.colorScheme || html.className || "").toString();
  if (/\bdark\b/.test(marker)) return true;
  if (/\blight\b/.test(marker)) return false;
  for (const node of [document.body, html]) {
    const rgb = node && getComputedStyle(node).backgroundColor.match(/[\d.]+/g);
    if (rgb && (rgb.length < 4 || Number(rgb[3]) > 0)) return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] < 128;
  }
  return matchMedia("(prefers-color-scheme: dark)").matches;
}
const paint = () => (frame.dataset.theme = dark() ? "dark" : "light");
new MutationObserver(paint).observe(document.documentElement, { attributes: true });
matchMedia("(prefers-color-scheme: dark)").addEventListener("change", paint);

// ------------------------------------------------------------------------------------------ talking

// A visitor token names a random visitor; it is renewed (same visitor) before it runs out. The session id lives
// under the visitor's id: a visitor may use no other.
async function token() {
  let state = kept.get();
  const left = Date.parse(state.expires_at) - Date.now();
  if (!(state.token && left > 60_000)) {
    const headers = { "content-type": "application/json" };
    if (state.token && left > 0) headers.authorization = `Bearer ${state.token}`;
    // a page of an origin the key does not list gets no CORS grant: the browser hides the 403 as a network error
    const response = await fetch(`${HOME}/v1/widget/session?key=${encodeURIComponent(KEY)}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ key: KEY }),
    }).catch(() => {
      throw new Refusal(T.unreachable);
    });
    if (!response.ok) throw new Refusal(response.status === 403 ? T.refused : await AssistRender.problem(response));
    state = { ...state, ...(await response.json()) };
  }
  if (!String(state.session).startsWith(state.visitor + ".")) state = { ...state, session: newSession(state.visitor), asked: false };
  kept.set(state);
  return state;
}

class Refusal extends Error {}

function newSession(visitor) {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return `${visitor}.${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

// `request(state)`: the path and the body for the visitor the token names (its sessions live under its id). A 401
// is a token this engine cannot verify (a key it does not hold, or one retired): the token is dropped and a new one
// fetched, once, before the caller sees the error.
async function call(method, request, retried = false) {
  const state = await token();
  const [path, body] = request(state);
  const headers = { authorization: `Bearer ${state.token}`, "x-assist-page": location.href.split("#")[0] };
  if (body) headers["content-type"] = "application/json";
  const response = await fetch(`${BASE}${path}${path.includes("?") ? "&" : "?"}key=${encodeURIComponent(KEY)}`, {
    method,
    headers,
    body: body && JSON.stringify(body),
  });
  if (response.status === 401 && !retried) {
    kept.set({ ...kept.get(), token: null, expires_at: null });
    return call(method, request, true);
  }
  if (response.status === 429) throw new Refusal(T.wait(response.headers.get("retry-after") || "60"));
  return response;
}

// ------------------------------------------------------------------------------------------ asking

let busy = false;
let loaded = false;

// `force`: "Ask anyway" (force_answer): a question like any other, counted by the visitor's and the key's limits.
async function ask(message, force = false) {
  const node = addTurn(message);
  busy = send.disabled = true;
  try {
    const response = await call("POST", (state) => {
      kept.set({ ...state, asked: true }); // from now on the server has a history of this session
      return ["/v1/ask/stream", { session_id: state.session, message, scope: SCOPE, ...(force && { force_answer: true }) }];
    });
    if (!response.ok) throw new Error(await AssistRender.problem(response));
    await AssistRender.play(node, response, { repaint: follow });
    announce(T.complete);
  } catch (error) {
    announce(AssistRender.fail(node, error.message));
  } finally {
    busy = send.disabled = false;
  }
}

function addTurn(message) {
  const node = AssistRender.turn(message, String(log.children.length + 1), T, () => !busy && (ask(message, true), true));
  AssistRender.wireFeedback(node, async (turn, feedback) => {
    return call("POST", (state) => [`/v1/sessions/${encodeURIComponent(state.session)}/turns/${turn}/feedback`, feedback]);
  });
  log.append(node);
  empty.hidden = true;
  node.scrollIntoView({ block: "start" });
  return node;
}

function follow() {
  const box = log.parentElement;
  const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 60;
  return () => {
    if (atEnd) box.scrollTop = box.scrollHeight;
  };
}

// The conversation so far (a visitor reads only its own sessions), once per page.
async function load() {
  if (loaded) return;
  loaded = true;
  const state = kept.get();
  if (!state.session || !state.asked) return;
  try {
    const response = await call("GET", (now) => [`/v1/sessions/${encodeURIComponent(now.session)}`]);
    if (!response.ok) return;
    const transcript = await response.json();
    const intents = new Map(transcript.intents.map((i) => [i.turn, i]));
    for (const turn of transcript.turns) AssistRender.stored(addTurn(turn.message), turn, intents.get(turn.turn));
  } catch (error) {
    announce(error.message);
  }
}

function announce(text) {
  status.textContent = text;
}

// ------------------------------------------------------------------------------------------ the panel

function open() {
  panel.hidden = false;
  launcher.setAttribute("aria-expanded", "true");
  frame.dataset.open = "";
  field.focus();
  load();
}

function shut() {
  panel.hidden = true;
  launcher.setAttribute("aria-expanded", "false");
  delete frame.dataset.open;
  launcher.focus();
}

// Tab and Shift+Tab stay inside the open panel; Esc closes it.
panel.addEventListener("keydown", (event) => {
  if (event.key === "Escape") {
    event.preventDefault();
    shut();
  } else if (event.key === "Tab") {
    const stops = [...panel.querySelectorAll("button, textarea, select, summary, a[href], pre, [tabindex='0']")].filter(
      (n) => !n.disabled && n.getClientRects().length,
    );
    const at = stops.indexOf(root.activeElement);
    const next = event.shiftKey ? (at <= 0 ? stops.length - 1 : at - 1) : at === stops.length - 1 ? 0 : at + 1;
    event.preventDefault();
    stops[next].focus();
  }
});
launcher.addEventListener("click", () => (panel.hidden ? open() : shut()));
close.addEventListener("click", shut);
fresh.addEventListener("click", () => {
  kept.set({ ...kept.get(), session: null, asked: false });
  log.replaceChildren();
  empty.hidden = false;
  field.focus();
});
form.addEventListener("submit", (event) => {
  event.preventDefault();
  const message = field.value.trim();
  if (!message || busy) return;
  field.value = "";
  ask(message);
});
field.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    form.requestSubmit();
  }
});

paint();
if (document.body) document.body.append(host);
else addEventListener("DOMContentLoaded", () => document.body.append(host));
