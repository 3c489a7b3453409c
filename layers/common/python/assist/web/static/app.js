// The web chat of the assistance engine. Plain JavaScript, no build step, no third-party code:
// it calls the same origin's API (POST /v1/ask/stream, GET /v1/sessions/{id}, POST …/feedback) and shows each
// answer with render.js, the renderer the widget shares (ADR 0087).
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const SESSION_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;
const STRINGS = AssistRender.STRINGS.en; // the page's own words; a model-less answer's notice speaks its language
// The state machine's failed tasks, which only /v1/ask turns carry: the page's transcripts may show them, the
// widget (which only streams) never meets them.
Object.assign(STRINGS.degraded, {
  retrieve_failed: "The documentation search kept failing, so this answer has no documentation passages.",
  classify_failed: "The message could not be classified. Please send it again.",
  answer_failed: "The answer could not be written. Please send it again.",
});
const TYPES = {
  RETRIEVAL: "RETRIEVAL: explain from the docs",
  CODE_GENERATION: "CODE_GENERATION: write or fix code",
  CONVERSATIONAL: "CONVERSATIONAL: about this chat",
  PLATFORM: "PLATFORM: my account",
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
    announce("The conversation could not be loaded: " + (await AssistRender.problem(response)));
    return;
  }
  const transcript = await response.json();
  const intents = new Map(transcript.intents.map((i) => [i.turn, i]));
  for (const turn of transcript.turns) AssistRender.stored(addTurn(turn.message), turn, intents.get(turn.turn));
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

// ---------------------------------------------------------------------------------------- asking

// `force`: the same question again, answered by the model whatever the evidence said ("ask anyway").
async function ask(message, force = false) {
  const node = addTurn(message);
  setBusy(true);
  fresh = false;
  try {
    const body = { session_id: session, message, ...(force ? { force_answer: true } : {}) };
    const response = await call("POST", "/v1/ask/stream", body);
    if (!response.ok) throw new Error(await AssistRender.problem(response));
    const { done, timings } = await AssistRender.play(node, response, { repaint: follow });
    showTrace(node, done.trace, timings);
    announce(STRINGS.complete);
  } catch (error) {
    announce(AssistRender.fail(node, error.message));
  } finally {
    setBusy(false);
  }
}

// The page's answers also carry the stages' timings and a list to say which type the message was.
function addTurn(message) {
  const node = AssistRender.turn(message, String($("#log").children.length + 1), STRINGS, () => {
    if (busy) return false;
    ask(message, true);
    return true;
  });
  $(".feedback", node).before(traceSection());
  $(".saved", node).before(typeList());
  AssistRender.wireFeedback(node, (turn, feedback) =>
    call("POST", `/v1/sessions/${encodeURIComponent(session)}/turns/${turn}/feedback`, feedback),
  );
  $("#log").append(node);
  $("#empty").hidden = true;
  node.scrollIntoView({ block: "start", behavior: "smooth" });
  return node;
}

// While an answer streams in, the page follows it if the reader was at the bottom.
function follow() {
  const atEnd = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
  return () => {
    if (atEnd) window.scrollTo({ top: document.documentElement.scrollHeight });
  };
}

function traceSection() {
  const section = document.createElement("section");
  section.className = "trace";
  section.hidden = true;
  const heading = document.createElement("h2");
  heading.append("Timings ", Object.assign(document.createElement("span"), { className: "total" }));
  section.append(heading, Object.assign(document.createElement("ol"), { className: "waterfall" }));
  return section;
}

function typeList() {
  const label = Object.assign(document.createElement("label"), { className: "retype" });
  const select = document.createElement("select");
  select.append(new Option("pick the type…", ""), ...Object.entries(TYPES).map(([value, text]) => new Option(text, value)));
  label.append(Object.assign(document.createElement("span"), { textContent: "Wrong kind of answer?" }), select);
  return label;
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
      const track = Object.assign(document.createElement("span"), { className: "track" });
      const bar = Object.assign(document.createElement("span"), { className: "fill" });
      bar.dataset.stage = stage.name;
      bar.style.left = `${(100 * start) / total}%`;
      bar.style.width = `${Math.max((100 * stage.ms) / total, 0.5)}%`;
      track.append(bar);
      start += stage.ms;
      row.append(Object.assign(document.createElement("span"), { textContent: stage.name }), track);
      row.append(Object.assign(document.createElement("span"), { textContent: ms(stage.ms) }));
      row.title = `${stage.name}: ${ms(stage.ms)}`;
      return row;
    }),
  );
  section.hidden = stages.length === 0;
}

function ms(value) {
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${Math.round(value)} ms`;
}

// ---------------------------------------------------------------------------------------- page

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
