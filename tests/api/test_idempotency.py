"""Idempotency-Key leases: a key held by a request that died with its web process is taken over
once its lease lapses, by exactly one retry; until then retries get 409 with the seconds left in
Retry-After. Completed records still replay for 24 h, and a key reused for another body is 422.

The first test kills a real gunicorn while it holds a key (a transaction of the test holds the
organization's row, so the request blocks inside the audit service) and retries on a new one.
Before leases, every retry answered 409 "in flight" for 24 hours."""

import math
import re
import threading
import time
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
import requests
import yaml
from django.conf import settings
from django.db import connection
from django.utils import timezone
from rest_framework.response import Response

from tests.faults.support import wait_until
from tests.support.api import error_of, make_key
from tests.support.web import Gunicorn
from tlsaudit.api import idempotency
from tlsaudit.api.models import IdempotencyRecord
from tlsaudit.audits.models import Audit

ROOT = Path(__file__).resolve().parents[2]
LEASE_S = 30   # the killed server's lease: long enough for a new gunicorn to boot on a busy machine


def site_audits(site) -> str:
    return f"/api/v1/sites/{site.pk}/audits/"


def database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


# --- a web process killed while it holds a key ----------------------------------------------------

@pytest.fixture
def web(transactional_db, tmp_path):
    server = Gunicorn(database_url(), settings.REDIS_URL, tmp_path, workers=2, IDEMPOTENCY_LEASE_SECONDS=LEASE_S)
    yield server
    server.kill()
    print(server.log())


def blocked_on_the_organization_row(dsn: str) -> bool:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                            "AND wait_event_type = 'Lock' AND query LIKE '%orgs_organization%FOR UPDATE%'"
                            ).fetchone()[0] > 0


@pytest.mark.django_db(transaction=True)
def test_a_key_held_by_a_killed_web_process_is_taken_over_by_one_retry_when_its_lease_ends(web, org_a, site_a):
    _, plaintext = make_key(org_a)
    headers = {"Authorization": f"Bearer {plaintext}", "Idempotency-Key": "nightly-ci-42"}
    dsn = database_url()
    base = web.start()
    first: list = []

    # Given a request that holds the key and waits inside the audit service for the organization's row,
    with psycopg.connect(dsn) as holder:
        # NO KEY: blocks the audit service's FOR UPDATE, not the foreign-key checks of rows that point
        # at the organization (the key's reservation), so the request gets as far as the service.
        holder.execute("SELECT id FROM orgs_organization WHERE id = %s FOR NO KEY UPDATE", [org_a.pk])

        def post_first():
            try:
                first.append(requests.post(base + site_audits(site_a), headers=headers, timeout=60))
            except requests.RequestException as exc:
                first.append(exc)

        thread = threading.Thread(target=post_first)
        thread.start()
        wait_until(lambda: blocked_on_the_organization_row(dsn), 30, "the request to wait for the organization row")
        record = IdempotencyRecord.objects.get(key="nightly-ci-42")
        assert record.status_code == idempotency.PENDING

        # when its web process is SIGKILLed mid-request (the dead request's transaction rolls back),
        web.kill()
        thread.join(30)
        holder.rollback()
    assert isinstance(first[0], requests.ConnectionError), first
    lease_ends = record.created_at + timedelta(seconds=LEASE_S)
    base = web.start()

    # then retries on a new server get 409 with the seconds left of the lease, not a 24 h lock-out,
    retry = base + site_audits(site_a)
    refusals = 0
    while (left_at_send := seconds_until(lease_ends)) > 1.5:
        answer = requests.post(retry, headers=headers, timeout=30)
        left_at_answer = seconds_until(lease_ends)
        assert answer.status_code == 409, (answer.status_code, answer.text)
        assert answer.json()["error"]["code"] == "idempotency_key_in_flight"
        # What was left while the server answered, give or take the second it is rounded up to.
        said = int(answer.headers["Retry-After"])
        assert math.floor(left_at_answer) <= said <= math.ceil(left_at_send) + 1, (said, left_at_send, left_at_answer)
        refusals += 1
        time.sleep(2)
    assert refusals >= 2, f"the new server took too long to start: {LEASE_S} s lease, {refusals} refusals"
    assert not Audit.objects.exists()

    # and once it has ended, of eight retries racing for the key exactly one runs the work.
    time.sleep(max(0.0, seconds_until(lease_ends) + 0.3))
    answers = race(8, lambda: requests.post(retry, headers=headers, timeout=60))
    ran = [a for a in answers if a.status_code == 202 and "Idempotency-Replayed" not in a.headers]
    assert len(ran) == 1, [(a.status_code, dict(a.headers)) for a in answers]
    assert not any("Already-Active" in a.headers for a in answers)   # no second run met the first one's audit
    for answer in answers:
        assert answer.status_code in (202, 409), (answer.status_code, answer.text)
        if answer.status_code == 409:
            assert 1 <= int(answer.headers["Retry-After"]) <= LEASE_S
    assert Audit.objects.count() == 1
    replayed = requests.post(retry, headers=headers, timeout=30)
    assert (replayed.status_code, replayed.headers["Idempotency-Replayed"]) == (202, "true")
    assert replayed.json()["id"] == ran[0].json()["id"] == Audit.objects.get().pk


def seconds_until(moment) -> float:
    return (moment - timezone.now()).total_seconds()


def race(n: int, call) -> list:
    start = threading.Barrier(n)
    results: list = []

    def one():
        start.wait()
        results.append(call())

    threads = [threading.Thread(target=one) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


# --- the lease, in process ------------------------------------------------------------------------

def hold_in_flight(leased_until):
    """Turn the key's completed record back into a pending one, as if its request were still running
    (or had died) with this lease; the audit that request created rolls back with it."""
    IdempotencyRecord.objects.update(status_code=idempotency.PENDING, body=None, location="",
                                     leased_until=leased_until)
    Audit.objects.all().delete()


@pytest.mark.django_db
def test_a_retry_during_the_lease_gets_409_with_the_seconds_left(api, site_a, settings):
    assert api.post(site_audits(site_a), HTTP_IDEMPOTENCY_KEY="k").status_code == 202
    hold_in_flight(timezone.now() + timedelta(seconds=30))

    retry = api.post(site_audits(site_a), HTTP_IDEMPOTENCY_KEY="k")

    assert retry.status_code == 409 and error_of(retry)["code"] == "idempotency_key_in_flight"
    assert 29 <= int(retry["Retry-After"]) <= 30
    assert not Audit.objects.exists()
    # The same key for another request is still refused as such, in flight or not.
    other = api.post(site_audits(site_a), {"note": "another body"}, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert other.status_code == 422 and error_of(other)["code"] == "idempotency_key_reused"


@pytest.mark.django_db
@pytest.mark.parametrize("leased_until", [timedelta(seconds=-1), None], ids=["lapsed", "before-leases"])
def test_a_retry_after_the_lease_runs_the_work_and_is_replayed_from_then_on(api, site_a, leased_until):
    assert api.post(site_audits(site_a), HTTP_IDEMPOTENCY_KEY="k").status_code == 202
    hold_in_flight(timezone.now() + leased_until if leased_until is not None else None)

    retry = api.post(site_audits(site_a), HTTP_IDEMPOTENCY_KEY="k")

    assert retry.status_code == 202 and "Idempotency-Replayed" not in retry
    record = IdempotencyRecord.objects.get()
    assert (record.status_code, record.attempt, record.leased_until) == (202, 2, None)
    assert record.body["id"] == Audit.objects.get().pk
    again = api.post(site_audits(site_a), HTTP_IDEMPOTENCY_KEY="k")
    assert again["Idempotency-Replayed"] == "true" and again.json() == retry.json()


@pytest.mark.django_db(transaction=True)
def test_of_retries_racing_for_a_lapsed_lease_exactly_one_takes_it(api, site_a, settings):
    settings.IDEMPOTENCY_LEASE_SECONDS = 45
    assert api.post(site_audits(site_a), HTTP_IDEMPOTENCY_KEY="k").status_code == 202
    hold_in_flight(timezone.now() - timedelta(seconds=1))
    pk = IdempotencyRecord.objects.get().pk

    def take():
        try:
            return idempotency.take_over(idempotency.with_lease_left().get(pk=pk)).attempt
        except idempotency.InFlight as refused:
            return f"409 after {refused.wait} s"
        finally:
            connection.close()

    outcomes = race(8, take)

    assert outcomes.count(2) == 1, outcomes
    # The losers wait for the winner's new lease: 45 s less what a busy machine took since it began.
    waits = [int(o.split()[2]) for o in outcomes if o != 2]
    assert len(waits) == 7 and all(30 <= w <= 45 for w in waits), outcomes
    assert IdempotencyRecord.objects.get().attempt == 2


@pytest.mark.django_db
def test_a_holder_that_lost_its_lease_can_neither_store_its_answer_nor_let_go_of_the_key(api, site_a):
    assert api.post(site_audits(site_a), HTTP_IDEMPOTENCY_KEY="k").status_code == 202
    hold_in_flight(timezone.now() - timedelta(seconds=1))
    lost = idempotency.with_lease_left().get()
    idempotency.take_over(idempotency.with_lease_left().get())   # a retry took it over

    idempotency.remember(lost, Response({"id": -1}, status=202))
    idempotency.release(lost)
    record = IdempotencyRecord.objects.get()
    assert (record.attempt, record.status_code, record.body) == (2, idempotency.PENDING, None)
    assert api.post(site_audits(site_a), HTTP_IDEMPOTENCY_KEY="k").status_code == 409   # the retry holds it


@pytest.mark.django_db
def test_a_completed_record_replays_for_24_hours_then_the_key_is_new(api, site_a):
    first = api.post(site_audits(site_a), HTTP_IDEMPOTENCY_KEY="k")
    Audit.objects.update(status="done")
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=23, minutes=59))
    replayed = api.post(site_audits(site_a), HTTP_IDEMPOTENCY_KEY="k")
    assert replayed["Idempotency-Replayed"] == "true" and replayed.json()["id"] == first.json()["id"]
    assert replayed["Idempotent-Replayed"] == "true"   # the former name, still sent for clients that read it

    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=24, minutes=1))
    fresh = api.post(site_audits(site_a), HTTP_IDEMPOTENCY_KEY="k")
    assert fresh.status_code == 202 and "Idempotency-Replayed" not in fresh
    assert fresh.json()["id"] != first.json()["id"] and Audit.objects.count() == 2


def test_the_lease_outlasts_the_longest_request_gunicorn_lets_live():
    # compose's web runs the image's CMD (no command of its own, #31): the Dockerfile holds the one --timeout
    assert "command" not in yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["web"]
    dockerfile_cmd = re.search(r'^CMD \["gunicorn".*$', (ROOT / "Dockerfile").read_text(), re.M).group()
    timeouts = {int(re.search(r'--timeout"?,? "?(\d+)', dockerfile_cmd).group(1))}
    assert timeouts == {30}, "gunicorn's --timeout bounds every request"
    assert settings.IDEMPOTENCY_LEASE_SECONDS > max(timeouts) + 10
