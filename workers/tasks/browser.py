"""The browser probe task: thin glue between the Probe row and the Chromium engine (workers/browser).

One Chromium per worker process, kept between probes by `BrowserHost` (launching one costs about
half a second and 100 MB; a probe is 20 page loads). Every name here is under
`workers.tasks.browser.*`, so it runs on the `browser` queue.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
from concurrent.futures import Future, wait
from contextlib import contextmanager

from celery import bootsteps
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_shutdown
from django.conf import settings
from django.core.cache import cache

from workers.celery import app

log = logging.getLogger(__name__)
LOCK_WAIT_SECONDS = 10
PROGRESS_EVERY_S = 0.5
# The engine's own deadline comes this long before the task stops waiting for it (the soft time limit),
# so that a slow probe ends with the engine's account of what loaded, not the task's.
ENGINE_MARGIN_S = 10


@app.task(name="workers.tasks.browser.run_probe", bind=True, acks_late=True, max_retries=30,
          soft_time_limit=settings.PROBE_SOFT_TIME_LIMIT, time_limit=settings.PROBE_HARD_TIME_LIMIT)
def run_probe(self, probe_id: int) -> str:
    """1. load the queued probe, 2. resolve and check the target, 3. lock its ip:port,
    4. claim the row atomically, 5. run the engine in this process's browser, progress onto
    the row, 6. store the result and its summary (or the engine's error), 7. release the lock."""
    from tlsaudit.probes import services
    from tlsaudit.probes.models import Probe
    from workers.net.errors import TargetError
    from workers.net.target import resolve_target

    probe = Probe.objects.select_related("site__organization").filter(pk=probe_id).first()
    if probe is None or probe.status != Probe.Status.QUEUED:
        return "skipped"  # deleted with its site, or another delivery already ran it
    site = probe.site
    try:
        target = resolve_target(site.hostname, site.https_port, pinned_ip=site.pinned_ip,
                                allow_private=settings.ALLOW_PRIVATE_TARGETS, resolver=settings.DNS_RESOLVER)
    except TargetError as exc:
        services.fail(probe, exc.code, exc.message)
        return "failed"
    problem = unreachable(probe, target.ip)
    if problem is not None:
        services.fail(probe, problem.code, problem.message)
        return "failed"
    with target_lock(target.ip, target.port, probe_id) as locked:
        if not locked:
            if self.request.retries >= self.max_retries:
                services.fail(probe, "busy", "Another probe of this server did not finish in time; please retry.")
                return "failed"
            raise self.retry(countdown=LOCK_WAIT_SECONDS)  # two probes at once would skew each other's timings
        if not services.claim(probe_id, target.ip):
            return "skipped"
        return probe_and_store(probe, spec_for(probe, target.ip))


def unreachable(probe, ip: str):
    """Pre-flight the port the probe's deciding variant loads (one TLS handshake for HTTPS, a TCP
    connect for an HTTP-only probe) with a deadline on the whole exchange: a silent, dropping,
    trickling or non-TLS server fails the probe in seconds with the reason, before Chromium waits
    out its page timeout. A refused port is left to Chromium: it fails as fast and says so."""
    from workers.tls.reach import engine_preflight

    site = probe.site
    tls = "https" in (probe.params.get("variants") or ("https",))
    return engine_preflight(ip, site.https_port if tls else site.http_port, site.hostname,
                            settings.SCAN_NETWORK_TIMEOUT, tls=tls)


def spec_for(probe, checked_ip: str):
    """What to load: the site's host and ports, the organization's CA, the params, and the address:
    the site's pinned IP, else the one just checked (as the engine's guard would pin it; when private
    targets are allowed, Chromium resolves the name itself and the DNS phase is measured)."""
    from workers.browser.spec import ProbeSpec

    site = probe.site
    ip = site.pinned_ip or (None if settings.ALLOW_PRIVATE_TARGETS else checked_ip)
    return ProbeSpec(host=site.hostname, https_port=site.https_port, http_port=site.http_port,
                     path=probe.params.get("path", "/"), ip=ip,
                     ca_pem=site.organization.custom_ca_pem or None, runs=probe.params.get("runs", 5),
                     timeout_s=float(settings.PROBE_LOAD_TIMEOUT),
                     variants=tuple(probe.params.get("variants") or ("https", "http")),
                     deadline_s=max(1.0, float(settings.PROBE_SOFT_TIME_LIMIT - ENGINE_MARGIN_S)))


def probe_and_store(probe, spec) -> str:
    from tlsaudit.probes import services

    progress = ProgressBox(probe.pk)
    cancelled = threading.Event()
    limit = settings.PROBE_SOFT_TIME_LIMIT
    try:
        job = HOST.submit(spec, cancel=cancelled.is_set, on_progress=progress)
        result = wait_reporting_progress(job, progress, deadline=time.monotonic() + limit)
    except (SoftTimeLimitExceeded, TimeoutError):
        cancelled.set()  # the engine stops at its next check; the browser stays for the next probe
        services.fail(probe, "time_limit", f"The probe did not finish within {limit} s: the pages load too slowly. "
                                        "Try fewer repetitions.")
        return "failed"
    except Exception as exc:
        if hasattr(exc, "code") and hasattr(exc, "message"):  # the engine's ProbeError, e.g. Chromium won't start
            services.fail(probe, exc.code, exc.message)
            return "failed"
        log.exception("browser probe %s crashed", probe.pk)  # a bug, not a site problem the engine reports
        services.fail(probe, "probe_crashed", f"The browser probe stopped unexpectedly ({type(exc).__name__}: "
                                              f"{exc}). Please retry; if it persists, tell us.")
        return "failed"
    return services.store_result(probe, result).status


def wait_reporting_progress(job: Future, progress: "ProgressBox", deadline: float) -> dict:
    """The engine runs on the browser's thread; this (the task's) thread writes its progress to the row."""
    while not wait([job], timeout=PROGRESS_EVERY_S).done:
        progress.flush()
        if time.monotonic() > deadline:
            raise TimeoutError
    return job.result()


class ProgressBox:
    """The engine's `on_progress`: keeps the latest (done, total, step) in memory, for the task's
    thread to write; the browser's thread never touches the database."""

    def __init__(self, probe_id: int):
        self.probe_id = probe_id
        self.lock = threading.Lock()
        self.latest: tuple | None = None
        self.written: tuple | None = None

    def __call__(self, done: int, total: int, load: dict) -> None:
        step = f"{load.get('variant', '').upper()} {load.get('mode', '')}, run {load.get('run', 0) + 1}"
        with self.lock:
            self.latest = (int(done), int(total), step if load.get("ok", True) else f"{step} failed")

    def flush(self) -> None:
        from tlsaudit.probes import services

        with self.lock:
            latest = self.latest
        if latest is not None and latest != self.written:
            services.record_progress(self.probe_id, *latest)
            self.written = latest


@contextmanager
def target_lock(ip: str, port: int, probe_id: int):
    """At most one probe per ip:port at a time (cache.add is SET NX on Redis)."""
    key = f"tlsaudit:probelock:{ip}:{port}"
    locked = cache.add(key, probe_id, timeout=settings.PROBE_HARD_TIME_LIMIT + 30)
    try:
        yield locked
    finally:
        if locked and cache.get(key) == probe_id:
            cache.delete(key)


# --- one browser per worker process ---------------------------------------------------------

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

    def submit(self, spec, *, cancel, on_progress) -> Future:
        future: Future = Future()
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self.serve, name="probe-browser", daemon=True)
                self.thread.start()
            self.jobs.put((spec, cancel, on_progress, future))
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
                spec, cancel, on_progress, future = job
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    future.set_result(self.probe(spec, cancel, on_progress))
                except BaseException as exc:  # handed to the waiting task, never lost with the thread
                    future.set_exception(exc)
        finally:
            if self.browser is not None:
                self.browser.close()
                self.browser = None

    def probe(self, spec, cancel, on_progress) -> dict:
        from workers.browser.chromium import ProbeBrowser
        from workers.browser.probe import run_probe as run_engine

        if self.browser is None:
            self.browser = ProbeBrowser(spec.ca_pem, {spec.host: spec.ip} if spec.ip else None)
        try:
            result = self.run_engine(run_engine, spec, cancel, on_progress)
            if self.is_alive() or not result.get("error"):
                return result
        except Exception:
            if self.is_alive():
                raise
        # Chromium died under the probe: the engine relaunches it (ensure), and the probe runs again, once.
        log.warning("Chromium died during a probe of %s; relaunching it once", spec.host)
        return self.run_engine(run_engine, spec, cancel, on_progress)

    def run_engine(self, run_engine, spec, cancel, on_progress) -> dict:
        try:
            return run_engine(spec, browser=self.browser, cancel=cancel, on_progress=on_progress,
                              allow_private=settings.ALLOW_PRIVATE_TARGETS, resolver=settings.DNS_RESOLVER)
        finally:
            if self.browser.browser is not None:
                self.tokens.add(self.browser.token)

    def is_alive(self) -> bool:
        return self.browser.browser is not None and self.browser.browser.is_connected()


HOST = BrowserHost()


@worker_process_shutdown.connect
def close_browser_of_child(**_):
    HOST.close()


class CloseBrowserAtStop(bootsteps.StartStopStep):
    """Solo and threads pools run tasks in the worker's own process: close its browser when the
    worker stops, warm or cold (the worker_shutdown signal is only sent on a warm stop)."""

    def stop(self, worker):
        HOST.close()

    terminate = shutdown = stop


app.steps["worker"].add(CloseBrowserAtStop)


atexit.register(HOST.close)
