"""Warm-up for Celery's worker_process_init, and no threads left behind by a scan."""

import threading
import time
import warnings

from workers.tls.engine import run_scan
from workers.tls.warmup import warm_up


def test_warm_up_loads_the_trust_stores_once_and_silences_the_serial_warning():
    from sslyze.plugins.certificate_info.trust_stores.trust_store_repository import TrustStoresRepository

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warm_up()
    assert TrustStoresRepository._DEFAULT_REPOSITORY is not None
    assert not [w for w in caught if "serial number" in str(w.message)]


def test_a_scan_leaves_no_sslyze_threads_behind(s_server):
    port = s_server()
    before = threading.active_count()
    outcome = run_scan("localhost", port, ip="127.0.0.1", allow_private=True, network_timeout=2)
    assert outcome.error is None
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == before
