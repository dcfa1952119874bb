"""Browser fixtures: one Debian Chromium per session, a fresh context (cookies, cache) per test.

The app is served by pytest-django's `live_server` on 127.0.0.1. A failing test leaves a
full-page screenshot in test-artifacts/. When the session ends, no Chromium it started may
still be running: every browser process carries a marker in its environment, so we can find
them even after they have been re-parented.
"""

import os
import re
import time
import uuid
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in the test thread; Django would refuse ORM calls there.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
# pytest-django serves on "localhost" by default; the suite only ever talks to 127.0.0.1.
os.environ.setdefault("DJANGO_LIVE_TEST_SERVER_ADDRESS", "127.0.0.1")

from tests.support.e2e import (  # noqa: E402  (after the environment above)
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    SCREENSHOTS,
    VIEWPORT,
)

MARKER = "TLSAUDIT_E2E_RUN"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


# --- processes ---------------------------------------------------------------------------

def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command name) for every process we can read."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may contain spaces and parentheses.
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        table[int(entry.name)] = (ppid, comm)
    return table


def marked_processes(token: str) -> list[int]:
    """Processes whose environment carries this session's marker: the browser and all its children."""
    needle = f"{MARKER}={token}".encode()
    found = []
    for pid in _processes():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(pid)
    return found


def chromium_descendants(root: int) -> list[int]:
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], list(children.get(root, []))
    while stack:
        pid = stack.pop()
        if re.match(r"chrom", table[pid][1]):
            found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def wait_until_gone(token: str, seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while True:
        left = marked_processes(token) + chromium_descendants(os.getpid())
        if not left or time.monotonic() > deadline:
            return sorted(set(left))
        time.sleep(0.1)


# --- fixtures ----------------------------------------------------------------------------

@pytest.fixture(scope="package")
def browser():
    """One Chromium for the e2e package. Not session-wide: Playwright's sync API keeps an asyncio
    loop running in this thread while it is started, and pytest-django runs these (transactional)
    tests before the plain ones, which start their own loops (uvloop, Playwright) in this thread."""
    from playwright.sync_api import sync_playwright

    token = uuid.uuid4().hex
    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                                              env={**os.environ, MARKER: token})
    except BaseException:
        playwright.stop()
        raise
    # The marker must be visible, or the leftover check below would prove nothing.
    assert marked_processes(token), "cannot see the Chromium processes this session started"
    yield chromium
    chromium.close()
    playwright.stop()
    left = wait_until_gone(token)
    assert not left, f"Chromium processes left running after the session: {left}"


@pytest.fixture
def page(browser, live_server, request):
    """A page in a fresh 1280x800 context whose relative URLs go to the live server."""
    context = browser.new_context(base_url=live_server.url, viewport=VIEWPORT, locale="en-US")
    page = context.new_page()
    page.set_default_timeout(10_000)
    js_errors, csp_violations = [], []
    page.on("pageerror", lambda exc: js_errors.append(str(exc)))
    # Chromium reports each blocked inline script/style, eval or foreign load as a console error.
    page.on("console", lambda msg: csp_violations.append(f"{page.url}: {msg.text}")
            if msg.type == "error" and "Content Security Policy" in msg.text else None)
    yield page
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        name = re.sub(r"[^\w.-]+", "_", request.node.nodeid)
        try:
            page.screenshot(path=ARTIFACTS / f"{name}.png", full_page=True)
        except Exception as exc:  # noqa: BLE001 — a broken page must not hide the real failure
            print(f"could not save a screenshot for {request.node.nodeid}: {exc}")
    context.close()
    assert not js_errors, f"JavaScript errors on the page: {js_errors}"
    assert not csp_violations, f"Content-Security-Policy violations: {csp_violations}"


@pytest.fixture
def screenshot_dir():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
