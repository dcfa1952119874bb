"""The browser probe task: thin glue between the Probe row and the Chromium engine (workers/browser).

Its opening is the gate's (gate.py); the probe runs in this process's one Chromium, `HOST`
(workers/browser/host.py), closed here when the worker stops. Every name here is under
`workers.tasks.browser.*`, so it runs on the `browser` queue.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, wait

from celery import bootsteps
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_process_shutdown
from django.conf import settings

from tlsaudit.domain.applicability import PROBE, not_applicable_reason
from tlsaudit.probes import services
from tlsaudit.probes.models import Probe
from workers.browser.host import HOST
from workers.browser.spec import ProbeSpec
from workers.celery import app
from workers.net.errors import TargetError
from workers.tasks import gate

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 0.5
# The engine's own deadline comes this long before the task stops waiting for it (the soft time limit),
# so that a slow probe ends with the engine's account of what loaded, not the task's.
ENGINE_MARGIN_S = 10
BUSY = "Another probe of this server did not finish in time; please retry."
fail = gate.without_detail(services.fail)  # how the gate fails a probe row


@app.task(name="workers.tasks.browser.run_probe", bind=True, acks_late=True, max_retries=30,
          soft_time_limit=settings.PROBE_SOFT_TIME_LIMIT, time_limit=settings.PROBE_HARD_TIME_LIMIT)
@gate.opening
def run_probe(self, probe_id: int) -> str:
    """1. load the queued probe, 2. resolve and check the target, 3. pre-flight the port its deciding
    variant loads, 4. lock its ip:port, 5. claim the row atomically, 6. run the engine in this
    process's browser, progress onto the row, 7. store the result and its summary (or the engine's
    error), 8. release the lock."""
    probe = gate.queued(Probe, probe_id)
    not_applicable = not_applicable_reason(probe.site.tls_service, PROBE)   # the site edited while queued?
    if not_applicable:
        gate.refuse(probe, fail, "not_applicable", not_applicable)
    target = gate.resolved(probe, fail)
    gate.reachable(probe, target.ip, [deciding_port(probe)], fail)
    holder = gate.holder_of(probe_id)
    with gate.target_lock("probe", target.ip, [target.port], holder, settings.PROBE_HARD_TIME_LIMIT + 30) as lock:
        if not lock:  # two probes at once would skew each other's timings
            gate.wait_for_target(self, settings.PROBE_LOCK_WAIT_SECONDS,
                                 give_up=lambda: services.fail(probe, "busy", BUSY))
        if not services.claim(probe_id, target.ip):
            return gate.SKIPPED
        return probe_and_store(probe, spec_for(probe, target.ip))


def deciding_port(probe) -> tuple[str, int]:
    """What the pre-flight checks: HTTPS (one TLS handshake) when the probe loads it at all, else the
    HTTP port (a TCP connect)."""
    site = probe.site
    tls = "https" in (probe.params.get("variants") or ("https",))
    return ("https", site.https_port) if tls else ("http", site.http_port)


def spec_for(probe, checked_ip: str):
    """What to load: the site's host and ports, the organization's CA, the params, and the address:
    the site's pinned IP, else the one just checked (as the engine's guard would pin it; when private
    targets are allowed, Chromium resolves the name itself and the DNS phase is measured)."""
    site = probe.site
    ip = site.pinned_ip or (None if settings.ALLOW_PRIVATE_TARGETS else checked_ip)
    return ProbeSpec(host=site.hostname, https_port=site.https_port, http_port=site.http_port,
                     path=probe.params.get("path", "/"), ip=ip,
                     ca_pem=site.organization.custom_ca_pem or None, runs=probe.params.get("runs", 5),
                     seconds=probe.params.get("seconds"),
                     timeout_s=float(settings.PROBE_LOAD_TIMEOUT),
                     variants=tuple(probe.params.get("variants") or ("https", "http")),
                     deadline_s=max(1.0, float(settings.PROBE_SOFT_TIME_LIMIT - ENGINE_MARGIN_S)))


def probe_and_store(probe, spec) -> str:
    progress = ProgressBox(probe.pk)
    cancelled = threading.Event()
    limit = settings.PROBE_SOFT_TIME_LIMIT
    try:
        job = HOST.submit(spec, cancel=cancelled.is_set, on_progress=progress,
                          allow_private=settings.ALLOW_PRIVATE_TARGETS, resolver=settings.DNS_RESOLVER)
        result = wait_reporting_progress(job, progress, deadline=time.monotonic() + limit)
    except (SoftTimeLimitExceeded, TimeoutError):
        cancelled.set()  # the engine stops at its next check; the browser stays for the next probe
        services.fail(probe, "time_limit", f"The probe did not finish within {limit} s: the pages load too slowly. "
                                        "Try a shorter time.")
        return gate.FAILED
    except TargetError as exc:  # the engine's own verdict, e.g. Chromium won't start
        services.fail(probe, exc.code, exc.message)
        return gate.FAILED
    except Exception as exc:
        log.exception("browser probe %s crashed", probe.pk)  # a bug, not a site problem the engine reports
        services.fail(probe, "probe_crashed", f"The browser probe stopped unexpectedly ({type(exc).__name__}: "
                                              f"{exc}). Please retry; if it persists, tell us.")
        return gate.FAILED
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
        with self.lock:
            latest = self.latest
        if latest is not None and latest != self.written:
            services.record_progress(self.probe_id, *latest)
            self.written = latest


# --- one browser per worker process ---------------------------------------------------------

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

