"""The widget on a docs site, in a real browser: Debian's Chromium driven by Playwright, against `assist local up`
and the Ollama test server. The sample docs pages are served from another loopback origin (another port) and
embed the engine's /widget.js with one `<script>` tag and a site key made by `assist keys create`.

Skipped, saying why, where the machine has no Chromium or no Playwright (as the web chat's test).
"""

from __future__ import annotations

import json
import os
import subprocess

import httpx
import pytest

from assist_dev.doubles.ollama_server import OllamaTestServer
from tests.e2e.test_local_stack import ASSIST
from tests.e2e.test_web_chat import CHROMIUM, CHROMIUM_ARGS, NARROW, WIDE, cached_stack, refresh_docs_images
from tests.e2e.test_web_uncertain import near_misses_shown
from tests.support.docs_site import DocsSite
from tests.support.folder_urls import in_folder

pytestmark = pytest.mark.e2e

QUESTION = "How does the engine decide that a message is about billing?"
OFF_TOPIC = "How do I bake sourdough bread?"  # not in the docs, said without a model (tests/e2e/test_web_uncertain.py)
ANSWER = "It routes each message through layers, cheapest first: rules, then the `embedding` classifier [1]."
AGGRESSIVE = """
* { all: unset; }
head, style, script, title { display: none !important; }
html, body, * { font: 22px/2.5 "Comic Sans MS", "URW Chancery L", cursive !important; color: #c00 !important; }
html { font-size: 10px !important; }
div { display: block; padding: 3em; }
button { border: 5px dotted red; text-transform: uppercase; }
"""
PAGE = """<!doctype html><html lang="en"{html_attrs}><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<title>Acme docs: {title}</title>
<style>{css}</style></head>
<body><header><a href="/">Acme Docs</a> <a href="/guide/">Guide</a></header>
<main><h1>{title}</h1><p>Acme routes every request through a gateway. <a href="#more">Read more</a></p>
<div id="more"><p>Each request carries a key.</p></div></main>
<script src="{engine}/widget.js" data-key="{key}"{script_attrs} defer></script></body></html>"""
# Elements of the open panel whose box and font must not depend on the host page's CSS
MEASURED = [".launcher", ".panel", "header", "h2", ".close", ".scroll", ".empty", "textarea", "button[type=submit]"]


@pytest.fixture(scope="module")
def sync_api():
    if not CHROMIUM.exists():
        pytest.skip(f"no {CHROMIUM}: `make setup` installs Debian's chromium where it runs as root with apt-get")
    return pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the dev extra pins it)")


@pytest.fixture(scope="module")
def ollama():
    with OllamaTestServer(models=["main-model:1b", "light-model:0.5b"]) as srv:
        yield srv


@pytest.fixture(scope="module")
def stack(tmp_path_factory, docs_index, ollama):
    with cached_stack(tmp_path_factory.mktemp("widget-stack"), docs_index, ollama) as base:
        yield base


@pytest.fixture(scope="module")
def site():
    with DocsSite() as docs:
        yield docs


@pytest.fixture(scope="module")
def key(stack, site, tmp_path_factory):
    """A site key for the sample site, made as an operator does: `assist keys create` against the running stack."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SESSION"))} | {"ASSIST_URL": stack}
    done = subprocess.run(
        [str(ASSIST), "keys", "create", "--origin", site.url, "--name", "sample docs", "--json"],
        cwd=tmp_path_factory.mktemp("keys"),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["key"]


@pytest.fixture(scope="module")
def chromium(sync_api):
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def page_on(
    site: DocsSite, path: str, engine: str, key: str, css: str = "", html_attrs: str = "", script_attrs: str = ""
) -> str:
    site.put(
        path,
        PAGE.format(
            title=path.strip("/") or "Home",
            css=css,
            engine=engine,
            key=key,
            html_attrs=html_attrs,
            script_attrs=script_attrs,
        ),
    )
    return site.url + path


def watched(context, engine: str, site: DocsSite):
    """A new page; the console errors, failed requests and any request to a third origin it causes."""
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
    page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on(
        "request",
        lambda r: problems.append(f"third origin: {r.url}") if not r.url.startswith((engine, site.url)) else None,
    )
    return page, problems


def shadow(page, selector: str):
    """An element inside the widget's shadow root (Playwright's CSS engine pierces open shadow roots)."""
    return page.locator(f"[data-assist-widget] {selector}")


def focused_in_widget(page) -> str:
    """The class (or tag) of the element focused inside the widget's shadow root; '' when focus is outside it."""
    return page.evaluate(
        """() => {
          const host = document.querySelector('[data-assist-widget]');
          if (document.activeElement !== host) return '';
          const el = host.shadowRoot.activeElement;
          return el ? (el.className || el.tagName.toLowerCase()) : '';
        }"""
    )


def layout(page) -> dict[str, object]:
    return page.evaluate(
        """(selectors) => {
          const root = document.querySelector('[data-assist-widget]').shadowRoot;
          const out = {};
          for (const s of selectors) {
            const el = root.querySelector(s);
            const r = el.getBoundingClientRect();
            const cs = getComputedStyle(el);
            out[s] = [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height),
                      cs.fontFamily, cs.fontSize, cs.lineHeight, cs.color, cs.textTransform];
          }
          return out;
        }""",
        MEASURED,
    )


def test_a_visitor_asks_with_the_keyboard_on_a_docs_site_and_the_host_css_changes_nothing(
    sync_api, stack, site, key, chromium, ollama, tmp_path
):
    expect = sync_api.expect
    context = chromium.new_context(viewport=WIDE, locale="en-US")
    plain_url = page_on(site, "/plain.html", stack, key)
    hostile_url = page_on(site, "/guide/routing.html", stack, key, css=AGGRESSIVE)

    # The same panel on a plain page and under `* { all: unset }` with a global font
    boxes = {}
    for url in (plain_url, hostile_url):
        page, problems = watched(context, stack, site)
        page.goto(url)
        shadow(page, ".launcher").click()
        expect(shadow(page, ".panel")).to_be_visible()
        boxes[url] = layout(page)
        assert problems == [], problems
        page.close()
    assert boxes[plain_url] == boxes[hostile_url]
    assert "Comic" not in str(boxes[hostile_url][".empty"][4])

    # Keyboard only, on the hostile page: Tab reaches the launcher, Enter opens, the question streams in
    ollama.reply(ANSWER, model="main-model:1b")
    ollama.first_token_delay_s = 0.3
    ollama.token_delay_s = 0.03
    page, problems = watched(context, stack, site)
    page.goto(hostile_url)
    for _ in range(10):
        page.keyboard.press("Tab")
        if focused_in_widget(page) == "launcher":
            break
    assert focused_in_widget(page) == "launcher", "the launcher is reachable with Tab"
    page.keyboard.press("Enter")
    expect(shadow(page, ".panel")).to_be_visible()
    assert shadow(page, ".panel").get_attribute("role") == "dialog"
    assert (
        focused_in_widget(page) == "textarea"
        or page.evaluate("document.querySelector('[data-assist-widget]').shadowRoot.activeElement.id")
        == "assist-message"
    )
    page.evaluate(
        """() => {
          window.__seen = {changes: 0};
          const root = document.querySelector('[data-assist-widget]').shadowRoot;
          let last = '';
          new MutationObserver(() => {
            const answer = root.querySelector('.turn:last-child .answer');
            if (!answer) return;
            const text = answer.querySelector('.text').textContent;
            if (window.__seen.badge === undefined && answer.querySelector('.type').dataset.type)
              window.__seen.badge = performance.now();
            if (window.__seen.text === undefined && text.trim()) window.__seen.text = performance.now();
            if (text !== last && answer.dataset.state === 'streaming') window.__seen.changes += 1;
            last = text;
          }).observe(root, {subtree: true, childList: true, characterData: true, attributes: true});
        }"""
    )
    page.keyboard.type(QUESTION)
    page.keyboard.press("Enter")
    answer = shadow(page, ".turn .answer").last
    expect(answer).to_have_attribute("data-state", "done", timeout=30_000)
    seen = page.evaluate("window.__seen")
    assert seen["badge"] < seen["text"], seen
    assert seen["changes"] > 3, f"the answer streams in: {seen}"
    expect(answer.locator(".type")).to_have_text("RETRIEVAL")
    expect(answer.locator(".text code")).to_have_text("embedding")
    assert answer.get_attribute("aria-busy") == "false"
    assert shadow(page, ".log").get_attribute("aria-live") == "polite"
    paths = answer.locator(".sources li .source-path")
    assert paths.count() >= 1
    assert all(in_folder(p) for p in paths.all_inner_texts())  # its path in docs/, never a build path
    answer.locator("a.cite").first.click()  # a citation opens its source's passage
    expect(answer.locator(".sources .passage").first).to_be_visible()

    # Focus stays in the open panel both ways round; Esc closes it and gives focus back to the launcher
    for key_name in ("Tab", "Shift+Tab"):
        for _ in range(25):
            page.keyboard.press(key_name)
            assert focused_in_widget(page) not in ("", "launcher"), f"{key_name} left the panel"
    shadow(page, "textarea").focus()
    page.keyboard.press("Escape")
    expect(shadow(page, ".panel")).to_be_hidden()
    assert focused_in_widget(page) == "launcher"
    page.keyboard.press("Enter")
    expect(shadow(page, ".panel")).to_be_visible()

    answer.get_by_role("button", name="Helpful", exact=True).click()
    expect(answer.locator(".saved")).to_have_text("Thanks, saved")
    to_top = "document.querySelector('[data-assist-widget]').shadowRoot.querySelector('.scroll').scrollTop = 0"
    page.evaluate(to_top)  # the question, the badge and the answer
    page.screenshot(path=tmp_path / "widget.png")

    page.set_viewport_size(NARROW)
    panel = shadow(page, ".panel").bounding_box()
    assert (panel["x"], panel["width"]) == (0, NARROW["width"]), f"the panel fills a phone's screen: {panel}"
    assert page.evaluate(
        "(() => { const s = document.querySelector('[data-assist-widget]').shadowRoot.querySelector('.scroll');"
        " return s.scrollWidth <= s.clientWidth; })()"
    ), "nothing in the panel scrolls sideways at 360 px"
    page.evaluate(to_top)
    page.screenshot(path=tmp_path / "widget-360.png")
    assert problems == [], problems
    context.close()
    refresh_docs_images(tmp_path, "widget.png", "widget-360.png")


def test_a_spanish_visitor_without_a_model_reads_spanish_and_the_dark_page_gets_a_dark_panel(
    sync_api, stack, site, key, chromium, ollama, tmp_path
):
    expect = sync_api.expect
    ollama.set_down()
    context = chromium.new_context(viewport=WIDE, locale="es-ES")
    url = page_on(
        site, "/oscuro.html", stack, key, css="body { background: #111; color: #ddd; }", html_attrs=' data-theme="dark"'
    )
    page, problems = watched(context, stack, site)
    page.goto(url)
    launcher = shadow(page, ".launcher")
    assert launcher.get_attribute("aria-label") == "Pregunta a la documentación"
    assert shadow(page, ".w").get_attribute("data-theme") == "dark"
    launcher.click()
    shadow(page, "textarea").fill("¿Dónde se guarda el índice?")
    shadow(page, "textarea").press("Enter")
    answer = shadow(page, ".turn .answer").last
    expect(answer).to_have_attribute("data-state", "done", timeout=30_000)
    assert answer.locator(".text").inner_text().startswith("El modelo de lenguaje no está disponible")
    notice = answer.locator(".degraded li[data-code=llm_unavailable]")
    expect(notice).to_contain_text("No se pudo contactar con ningún modelo de lenguaje")
    expect(notice).to_contain_text("cita los pasajes más relevantes de la documentación")
    expect(answer.locator(".sources h2")).to_contain_text("Fuentes")
    page.screenshot(path=tmp_path / "widget-es-dark.png")

    # "Ask anyway" (ADR 0084) in the widget: the same question again with force_answer, a question like any other
    asked: list[dict] = []
    page.on("request", lambda r: asked.append(r.post_data_json) if r.method == "POST" and "/v1/ask/" in r.url else None)
    shadow(page, "textarea").fill(OFF_TOPIC)
    shadow(page, "textarea").press("Enter")
    declined = shadow(page, ".turn .answer").nth(1)
    expect(declined).to_have_attribute("data-state", "done", timeout=30_000)
    expect(declined.locator(".uncertain")).to_have_text("No está en la documentación")
    assert in_folder(declined.locator(".text .source-path").first.get_attribute("title"))  # a near miss
    near_misses_shown(expect, declined, "Secciones más cercanas en la documentación")  # the passages kept (ADR 0102)
    declined.get_by_role("button", name="Preguntar de todos modos").click()
    forced = shadow(page, ".turn .answer").nth(2)
    expect(forced).to_have_attribute("data-state", "done", timeout=30_000)
    expect(forced.locator(".uncertain")).to_be_hidden()
    expect(declined.get_by_role("button", name="Preguntar de todos modos")).to_be_hidden()
    assert [(b["message"], b.get("force_answer")) for b in asked] == [(OFF_TOPIC, None), (OFF_TOPIC, True)]
    assert problems == [], problems
    context.close()
    refresh_docs_images(tmp_path, "widget-es-dark.png")


def test_a_page_of_an_origin_the_key_does_not_list_gets_no_token_and_no_cors_grant(sync_api, stack, key, chromium):
    expect = sync_api.expect
    with DocsSite() as elsewhere:  # another port: another origin, not the key's
        url = page_on(elsewhere, "/copy.html", stack, key)
        context = chromium.new_context(viewport=WIDE, locale="en-US")
        page = context.new_page()
        sessions: list[str] = []  # what became of each visitor-token request: a status, or the browser's refusal
        wanted = lambda r: "/v1/widget/session" in r.url and r.method == "POST"  # noqa: E731
        page.on("response", lambda r: sessions.append(str(r.status)) if wanted(r.request) else None)
        page.on("requestfailed", lambda r: sessions.append(r.failure or "failed") if wanted(r) else None)
        page.goto(url)
        shadow(page, ".launcher").click()
        shadow(page, "textarea").fill(QUESTION)
        shadow(page, "textarea").press("Enter")
        answer = shadow(page, ".turn .answer").last
        expect(answer).to_have_attribute("data-state", "failed", timeout=15_000)
        expect(answer.locator(".error")).to_contain_text("could not be reached from this page")
        # refused with no grant for this origin: the browser withholds the 403 from the page as a failed request
        assert len(sessions) == 1, sessions
        assert sessions[0] != "200", sessions
        direct = httpx.post(f"{stack}/v1/widget/session", json={"key": key}, headers={"origin": elsewhere.url})
        assert (direct.status_code, direct.headers.get("access-control-allow-origin")) == (403, None)
        assert page.evaluate("Object.keys(sessionStorage)") == []  # no token kept
        context.close()


def test_a_token_the_engine_cannot_verify_is_dropped_and_the_question_answered_with_a_new_one(
    sync_api, stack, site, key, chromium, ollama
):
    """After a key rotation a token may name a key an engine does not hold: the widget gets a new token, once,
    and the visitor sees the answer, not an error (ADR 0119)."""
    jwt = pytest.importorskip("jwt")
    expect = sync_api.expect
    ollama.set_up()
    ollama.reply(ANSWER, model="main-model:1b")
    context = chromium.new_context(viewport=WIDE, locale="en-US")
    page, problems = watched(context, stack, site)
    seen: list[tuple[str, str, int]] = []
    page.on("response", lambda r: seen.append((r.request.method, r.url.split("?")[0].removeprefix(stack), r.status)))
    page.goto(page_on(site, "/rotated.html", stack, key))
    shadow(page, ".launcher").click()
    shadow(page, "textarea").fill(QUESTION)
    shadow(page, "textarea").press("Enter")
    expect(shadow(page, ".turn .answer").last).to_have_attribute("data-state", "done", timeout=30_000)

    store = f"assist.widget.{key}"
    kept = json.loads(page.evaluate(f"sessionStorage.getItem({json.dumps(store)})"))
    claims = jwt.decode(kept["token"], options={"verify_signature": False})
    header = {"typ": "assist-visitor+jwt", "kid": "0123456789abcdef"}  # a key this engine does not hold
    kept["token"] = jwt.encode(claims, "a key another engine rotated to, long enough" * 2, "HS256", headers=header)
    page.evaluate(f"sessionStorage.setItem({json.dumps(store)}, {json.dumps(json.dumps(kept))})")
    seen.clear()
    shadow(page, "textarea").fill("And how does it decide about code?")
    shadow(page, "textarea").press("Enter")
    answer = shadow(page, ".turn .answer").last
    expect(answer).to_have_attribute("data-state", "done", timeout=30_000)
    expect(answer.locator(".text")).to_contain_text("It routes each message")
    calls = [c for c in seen if c[0] != "OPTIONS"]
    assert calls == [
        ("POST", "/v1/ask/stream", 401),
        ("POST", "/v1/widget/session", 200),
        ("POST", "/v1/ask/stream", 200),
    ], calls
    renewed = json.loads(page.evaluate(f"sessionStorage.getItem({json.dumps(store)})"))
    assert renewed["token"] != kept["token"]
    assert renewed["session"].startswith(renewed["visitor"] + ".")
    assert [p for p in problems if "401" not in p] == [], problems  # the one refusal, and the browser's note of it
    context.close()
