"""This process's one Chromium, kept between probes (launching one costs about half a second and
100 MB; a probe is 20 page loads). The browser task (workers/tasks/browser.py) submits its probes to
`HOST` and closes it when its worker stops.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from concurrent.futures import Future

from workers.browser.chromium import ProbeBrowser
from workers.browser.probe import run_probe

log = logging.getLogger(__name__)


class BrowserHost:
    """This process's one Chromium (the engine's ProbeBrowser), owned by one thread.

    Playwright's sync API only works on the thread that started it, and Celery's threads pool runs
    tasks on any of its threads; so one owner thread launches the browser on first use, runs every
    probe in it and closes it at worker shutdown. The engine relaunches it when a probe needs
    another CA or host pin (Chromium switches) or when it died between probes; a browser that dies
    during a probe is relaunched here, once, and the probe run again.
    """

    def __init__(self):
        self.jobs: queue.Queue = queue.Queue()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()
        self.browser = None
        self.tokens: set[str] = set()  # each launched browser's marker (tests count launches)

    @property
    def launches(self) -> int:
        return len(self.tokens)

    def submit(self, spec, *, cancel, on_progress, **engine_options) -> Future:
        """Run the engine on `spec` in this browser; `engine_options` (allow_private, resolver) go to it."""
        future: Future = Future()
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self.serve, name="probe-browser", daemon=True)
                self.thread.start()
            self.jobs.put((spec, cancel, on_progress, engine_options, future))
        return future

    def close(self, timeout: float = 60) -> None:
        """Close the browser (and stop its thread); the next probe launches a new one."""
        with self.lock:
            thread, self.thread = self.thread, None
            if thread is not None and thread.is_alive():
                self.jobs.put(None)
        if thread is not None:
            thread.join(timeout)

    def serve(self) -> None:
        try:
            while (job := self.jobs.get()) is not None:
                spec, cancel, on_progress, options, future = job
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    future.set_result(self.probe(spec, cancel, on_progress, options))
                except BaseException as exc:  # handed to the waiting task, never lost with the thread
                    future.set_exception(exc)
        finally:
            if self.browser is not None:
                self.browser.close()
                self.browser = None

    def probe(self, spec, cancel, on_progress, options: dict) -> dict:
        if self.browser is None:
            self.browser = ProbeBrowser(spec.ca_pem, {spec.host: spec.ip} if spec.ip else None)
        try:
            result = self.run_engine(spec, cancel, on_progress, options)
            if self.is_alive() or not result.get("error"):
                return result
        except Exception:
            if self.is_alive():
                raise
        # Chromium died under the probe: the engine relaunches it (ensure), and the probe runs again, once.
        log.warning("Chromium died during a probe of %s; relaunching it once", spec.host)
        return self.run_engine(spec, cancel, on_progress, options)

    def run_engine(self, spec, cancel, on_progress, options: dict) -> dict:
        try:
            return run_probe(spec, browser=self.browser, cancel=cancel, on_progress=on_progress, **options)
        finally:
            if self.browser.browser is not None:
                self.tokens.add(self.browser.token)

    def is_alive(self) -> bool:
        return self.browser.browser is not None and self.browser.browser.is_connected()


HOST = BrowserHost()
atexit.register(HOST.close)
