"""Audits of one address take turns (#27): the task's opening (workers/tasks/audit.address_turn) on the
real PostgreSQL and Redis, without a worker (the messages it sends stay in the real broker's queue)."""

import time

import pytest

from tests.support.sites import added_site
from tlsaudit.alerts.services import failure_streak
from tlsaudit.audits.models import Audit
from tlsaudit.core import turns
from tlsaudit.core.queue import queue_is_empty
from tlsaudit.core.rediscache import redis_client
from workers.celery import app
from workers.tasks import gate
from workers.tasks.audit import address_turn, turn_token

pytestmark = pytest.mark.django_db
IP = "198.51.100.20"
TASK = "workers.tasks.audit.run_audit"


@pytest.fixture(autouse=True)
def empty_line_and_queue():
    redis_client().delete(*turns.keys(IP)[:3], f"tlsaudit:scanlock:{IP}:slot0", f"tlsaudit:scanlock:{IP}:slot1")
    app.control.purge()
    yield
    redis_client().delete(*turns.keys(IP)[:3], f"tlsaudit:scanlock:{IP}:slot0", f"tlsaudit:scanlock:{IP}:slot1")
    app.control.purge()


@pytest.fixture
def shared(org_a):
    """Three sites of one organization on one address, one queued audit each."""
    sites = [added_site(organization=org_a, hostname=f"site{n}.shared.test", pinned_ip=IP)
             for n in range(3)]
    return [Audit.objects.create(site=site, organization=org_a, host=site.hostname, port=443) for site in sites]


def test_while_one_audit_holds_the_address_the_next_waits_saying_so_and_starts_when_it_leaves(shared):
    first, second, _ = shared
    with address_turn(first, IP, "holder-1") as lock:
        assert lock is not None and lock.keys == [f"tlsaudit:scanlock:{IP}:slot0"]
        # Given the address is held, when the next audit asks, it is refused and the row says why
        with address_turn(second, IP, "holder-2") as refused:
            assert refused is None
        second.refresh_from_db()
        assert second.status == "queued"
        assert second.turn_note.startswith(f"Waiting for its turn at {IP}: TLS Audit audits one site per address")
        assert "an audit of another site on that address is running" in second.turn_note
        assert "its own deadline starts with its turn" in second.turn_note
        assert queue_is_empty(TASK)
    # Then the holder, leaving, sends it at once rather than leave the address idle until its retry
    assert not queue_is_empty(TASK)
    assert turns.first(IP) == turn_token(second.pk)
    with address_turn(second, IP, "holder-2") as lock:
        assert lock is not None
        second.refresh_from_db()
        assert second.turn_note == ""
    assert turns.waiting(IP) == 0


def test_the_line_is_first_come_first_served_even_when_the_address_is_free(shared):
    first, second, third = shared
    with address_turn(first, IP, "holder-1"):
        for audit in (second, third):
            with address_turn(audit, IP, f"holder-{audit.pk}") as refused:
                assert refused is None
    # The address is free, and the third comes back first: the second is still ahead of it
    with address_turn(third, IP, "holder-3") as refused:
        assert refused is None
    third.refresh_from_db()
    assert "1 audit of another site on that address is ahead of it" in third.turn_note
    with address_turn(second, IP, "holder-2") as lock:
        assert lock is not None


def test_an_audit_that_waited_past_the_bound_fails_as_ours_and_raises_no_failure_alert(shared, settings):
    settings.AUDIT_TURN_WAIT_SECONDS = 0
    first, second, _ = shared
    with address_turn(first, IP, "holder-1"):
        with address_turn(second, IP, "holder-2") as refused:      # joins the line
            assert refused is None
        time.sleep(0.01)     # Redis's clock in ms: past a bound of 0 s
        with pytest.raises(gate.Stop):
            with address_turn(second, IP, "holder-2"):
                pass
    second.refresh_from_db()
    assert (second.status, second.error_code) == ("failed", "address_busy")
    assert "TLS Audit's own queue was too long: nothing was sent to the server" in second.error_message
    assert f"for its turn at {IP}" in second.error_message
    assert failure_streak(second) == {"consecutive_failures": 0, "failing_since": None, "failing_for_s": 0}
    assert turns.waiting(IP) == 0


def test_an_operator_may_allow_two_audits_of_an_address_at_once(shared, settings):
    settings.SCAN_AUDITS_PER_IP = 2
    first, second, third = shared
    with address_turn(first, IP, "holder-1") as one, address_turn(second, IP, "holder-2") as two:
        assert one is not None and two is not None and one.keys != two.keys
        with address_turn(third, IP, "holder-3") as refused:
            assert refused is None


def test_an_audit_that_stopped_waiting_does_not_hold_the_line(shared):
    """Deleted with its site (or run by another delivery) while in line: without a check its place would
    hold the free address until it expired."""
    first, second, third = shared
    with address_turn(first, IP, "holder-1"):
        for audit in (second, third):
            with address_turn(audit, IP, f"holder-{audit.pk}") as refused:
                assert refused is None
    second.site.delete()

    with address_turn(third, IP, "holder-3") as lock:
        assert lock is not None
    assert turns.waiting(IP) == 0
