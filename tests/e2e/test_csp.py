"""The Content-Security-Policy in a real Chromium: our pages run under it without a single violation
(every e2e test asserts that in the `page` fixture), and it really blocks what it promises to block,
so that check is not vacuous."""

import pytest

from tests.support.e2e import VIEWPORT
from tests.support.personas import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_policy_blocks_injected_inline_script_and_style_and_htmx_will_not_eval(browser, live_server, alice,
                                                                                   org_a):
    context = browser.new_context(base_url=live_server.url, viewport=VIEWPORT)
    page = context.new_page()
    console = []
    page.on("console", lambda msg: console.append(msg.text) if msg.type == "error" else None)
    try:
        page.goto("/accounts/login/")
        page.get_by_label("Email").fill(alice.email)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_test_id("login-submit").click()
        page.wait_for_url("**/o/agency-a/sites/")
        assert console == [], console  # our own page: nothing blocked

        # An attacker's markup that slipped into the page: an inline script, an inline style, an hx-on handler.
        page.evaluate("""() => {
            const s = document.createElement("script"); s.textContent = "window.__pwned = 1"; document.body.append(s);
            const st = document.createElement("style"); st.textContent = "body { background: rgb(255, 0, 0) }";
            document.head.append(st);
            const b = document.createElement("button"); b.id = "hxon"; b.textContent = "x";
            b.setAttribute("hx-on:click", "window.__hxon = 1"); document.body.append(b); htmx.process(b);
        }""")
        page.click("#hxon")

        assert page.evaluate("window.__pwned") is None
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") != "rgb(255, 0, 0)"
        assert page.evaluate("window.__hxon") is None  # htmx.config.allowEval is off
        blocked = [m for m in console if "Content Security Policy" in m]
        assert any("script-src" in m for m in blocked) and any("style-src" in m for m in blocked), console
    finally:
        context.close()
