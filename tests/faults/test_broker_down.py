"""Redis down, hung or restarted empty (issue #14): work started meanwhile is answered in words and
kept or failed on its row, and audits whose messages the broker never got, or lost, run within 60 s
of its return.

The apps send through one door (tlsaudit.core.queue.enqueue): a message the broker refuses raises
QueueUnavailable after the row said so; the API answers 503 with `queued: false` and the row, pages
show the row with what happens to it. The reaper sends unsent audits as soon as the broker answers,
and notices a broker that lost everything it held (a key it keeps there is gone) at its next pass,
instead of waiting AUDIT_RESEND_AFTER_SECONDS (15 min). These tests run with the app's own settings
(production_timing) and note the measured times (pytest -s shows them).
"""

import json
import subprocess
import time
from contextlib import ExitStack
from datetime import datetime, timezone

import pytest
import requests

from tests.faults.support import PYTHON, ROOT, delay_proxy, production_timing, wait_until
from tests.faults.test_database_down import log_in
from tests.hostile import tarpit

pytestmark = pytest.mark.worker
BACK_WITHIN_S = 60  # issue #14: lost or unsent audits run again within this of the broker's return


def audits(faults, ids) -> dict[int, tuple]:
    return {row[0]: row[1:] for row in faults.sql.rows(
        "SELECT id, status, attempts, sent_at, grade FROM audits_audit WHERE id = ANY(%s)", list(ids))}


def wait_all_claimed(faults, ids, since: float, what: str) -> float:
    """Seconds from `since` until every audit of `ids` was claimed by a worker (running or finished)."""
    wait_until(lambda: all(status != "queued" for status, *_ in audits(faults, ids).values()), BACK_WITHIN_S,
               f"{what}: audits {sorted(ids)} to run within {BACK_WITHIN_S} s of Redis' return", interval=0.1)
    elapsed = time.monotonic() - since
    faults.notes.append(f"RECOVERY {what}: {len(ids)} audits running again {elapsed:.1f} s after Redis was back")
    return elapsed


def wait_all_done(faults, ids, timeout: float = 120) -> dict:
    def finished():
        rows = audits(faults, ids)
        return all(row[0] in ("done", "failed") for row in rows.values()) and rows
    return wait_until(finished, timeout, f"audits {sorted(ids)} to finish")


def test_work_started_while_redis_is_down_is_answered_503_and_its_audits_run_once_it_is_back(faults, tls_lab):
    production_timing(faults.env)
    web, base = faults.app.web()
    ports = [tls_lab.port("a_plus_rsa_hsts"), tls_lab.port("a_tls12_13_no_hsts")]
    seeded = faults.app.django(f"from tests.faults.seed import *; s = lab_sites({str(tls_lab.ca_file)!r}, {ports}); "
                               f"emit({{**s, 'key': api_key(s['orgs'][0])}})")
    (api_site, web_site), org = seeded["sites"], seeded["orgs"][0]
    worker = faults.app.worker("w1", concurrency=2)
    faults.app.beat()
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {seeded['key']}"
    alice = log_in(base, "owner0@faults.test")
    sites_page = f"{base}/o/{org}/sites/"

    faults.redis.stop()
    try:
        # Given Redis is down, when a program starts an audit
        started = time.monotonic()
        response = api.post(f"{base}/api/v1/sites/{api_site}/audits/", json={}, timeout=30)
        # then it learns at once that the audit exists but is not queued, and when to look again
        assert response.status_code == 503, response.text[:500]
        assert time.monotonic() - started < 10
        body = response.json()
        assert response.headers["Retry-After"] == "30"
        assert (body["queued"], body["error"]["code"]) == (False, "queue_unavailable")
        assert "starts by itself as soon as the queue is back" in body["error"]["message"]
        audit = body["created"]["id"]
        assert body["created"] == {"id": audit, "url": f"/api/v1/audits/{audit}/", "status": "queued"}
        assert response.headers["Location"] == body["created"]["url"]
        assert audits(faults, [audit])[audit][:3] == ("queued", 0, None)  # saved, marked unsent
        # and asking again does not start a second one
        again = api.post(f"{base}/api/v1/sites/{api_site}/audits/", json={}, timeout=30)
        assert (again.status_code, again.headers["Already-Active"], again.json()["id"]) == (202, "true", audit)
        # A person pressing "Audit now" sees the audit's page, saying what happens
        page = alice.post(f"{base}/o/{org}/sites/{web_site}/audits/", timeout=30,
                          headers={"X-CSRFToken": alice.cookies["csrftoken"], "Referer": sites_page})
        assert page.status_code == 200 and "/audits/" in page.url, (page.status_code, page.url)
        assert "starts by itself as soon as the queue is back" in page.text
        clicked = int(page.url.rstrip("/").rsplit("/", 1)[1])
        # Work that must not start later on its own fails at once, saying so: a report, a browser probe
        for path, payload in (("reports/", {}), (f"sites/{api_site}/probes/", {"runs": 1})):
            refused = api.post(f"{base}/api/v1/{path}", json=payload, timeout=30)
            assert refused.status_code == 503, refused.text[:300]
            assert (refused.json()["queued"], refused.json()["created"]["status"]) == (False, "failed")
        assert faults.sql.rows("SELECT error_code FROM probes_probe") == [("queue_unavailable",)]
    finally:
        faults.redis.start()
    back = time.monotonic()

    # Then both audits run within a minute of Redis' return, once each
    wait_all_claimed(faults, [audit, clicked], back, "broker down when started")
    rows = wait_all_done(faults, [audit, clicked])
    assert {row[:2] for row in rows.values()} == {("done", 1)}
    assert faults.sql.statuses() == {"done": 2}
    assert '" 500 ' not in web.output()  # no request failed (the access log)
    assert worker.output().count("'skipped'") <= 1  # at most one duplicate delivery, and it did nothing


def test_a_hung_redis_refuses_a_message_in_seconds_and_the_audit_waits_marked_unsent(faults, tls_lab):
    # A Redis that accepts connections and never answers (hung, or a proxy in front of a dead one).
    seeded = faults.app.django(f"from tests.faults.seed import *; emit(lab_sites({str(tls_lab.ca_file)!r}, "
                               f"[{tls_lab.port('a_plus_rsa_hsts')}]))")
    site = seeded["sites"][0]
    code = (f"import json, time, django; django.setup()\n"
            f"from tlsaudit.audits.services import queue_audit\nfrom tlsaudit.sites.models import Site\n"
            f"started = time.monotonic()\n"
            f"try:\n    queue_audit(Site.objects.get(pk={site}))\n    outcome = 'queued'\n"
            f"except Exception as refusal:\n    outcome = f'{{type(refusal).__name__}}: {{refusal}}'\n"
            f"print(json.dumps({{'outcome': outcome, 'seconds': time.monotonic() - started}}))")
    with tarpit() as port:
        run = subprocess.run([PYTHON, "-c", code], env={**faults.env, "REDIS_URL": f"redis://127.0.0.1:{port}/0"},
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["outcome"].startswith("QueueUnavailable: The audit is saved but not queued yet"), result
    assert result["seconds"] < 15, result
    assert faults.sql.rows("SELECT status, sent_at FROM audits_audit WHERE site_id = %s", site) == [("queued", None)]
    faults.notes.append(f"hung Redis: the send was refused after {result['seconds']:.1f} s")


def test_audits_whose_messages_a_redis_restart_lost_run_again_within_a_minute(faults, tls_lab):
    production_timing(faults.env)  # AUDIT_RESEND_AFTER_SECONDS is 15 min: the reaper must not wait for it
    faults.env["SCAN_AUDITS_PER_IP"] = "2"   # the lab's servers share 127.0.0.1: two audits of it at once (#27)
    names = tls_lab.names("grade")[:8]
    with ExitStack() as stack:
        # Slow servers: the scan worker is busy with two audits while the others wait in Redis.
        proxies = [stack.enter_context(delay_proxy(tls_lab.port(name), delay=0.3)) for name in names]
        faults.app.worker("scanner", queues=("scan",), concurrency=2)
        faults.app.worker("housekeeper", queues=("default",), concurrency=1)
        faults.app.beat()
        seeded = faults.app.django(f"from tests.faults.seed import *; "
                                   f"emit(lab_audits({str(tls_lab.ca_file)!r}, {[p.port for p in proxies]}))")
        ids = [int(audit) for audit in seeded["audits"].values()]
        wait_until(lambda: faults.sql.statuses().get("running", 0) == 2, 60, "two audits to be running")
        waiting = queued_messages(faults)
        assert len(waiting) >= 4, waiting
        # When Redis restarts without persistence (everything it held is lost), down for 3 s
        restarted_at = datetime.now(timezone.utc)
        faults.redis.stop()
        time.sleep(3)
        faults.redis.start()
        back = time.monotonic()
        for proxy in proxies:
            proxy.delay = 0
        # Then the lost audits are sent again at once, and all run within a minute of Redis' return
        resent = wait_until(lambda: resent_since(faults, waiting, restarted_at), BACK_WITHIN_S,
                            "the lost audits to be sent again")
        faults.notes.append(f"RECOVERY Redis restart: {len(waiting)} lost messages re-sent "
                            f"{time.monotonic() - back:.1f} s after Redis was back ({resent})")
        wait_all_claimed(faults, waiting, back, "Redis restart")
        rows = wait_all_done(faults, ids)
    assert {row[:2] for row in rows.values()} == {("done", 1)}, rows  # each ran once
    assert faults.sql.rows("SELECT audit_id, finding_id FROM audits_auditfinding "
                           "GROUP BY audit_id, finding_id HAVING count(*) > 1") == []


def queued_messages(faults) -> list[int]:
    """The audit ids whose task messages wait in the private Redis' scan queue."""
    raw = faults.redis.client().lrange("scan", 0, -1)
    return [json.loads(json.loads(message)["headers"]["argsrepr"])[0] for message in raw]


def resent_since(faults, ids, moment) -> int:
    rows = faults.sql.rows("SELECT count(*) FROM audits_audit WHERE id = ANY(%s) AND (sent_at > %s OR "
                           "status <> 'queued')", list(ids), moment)
    return rows[0][0] if rows[0][0] == len(ids) else 0
