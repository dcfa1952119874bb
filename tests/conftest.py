"""Shared fixtures. Personas, as in healthchecks: alice owns agency A, bob is a viewer in A,
charlie owns agency B. Tests run on the real PostgreSQL and Redis (see Makefile: make test)."""

import logging
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from tests.support.personas import make_user
from tests.support.sites import added_site

# Fixture modules, registered once (saleor's root conftest): tls_servers, the local TLS lab (tls_lab); wan,
# the latency lab; workers, the session's real Celery workers (start_worker_on); live_server, pytest-django's
# without Nagle's delay; quiet, the seats beside the measurements; tests/fixtures/, the
# fixtures several folders use (receivers, Chromium left behind, load workers and lab sites, probe workers).
pytest_plugins = ["tests.support.tls_servers", "tests.support.wan", "tests.support.workers", "tests.support.live_server",
                  "tests.support.quiet", "tests.fixtures.receivers", "tests.fixtures.chromium", "tests.fixtures.load",
                  "tests.fixtures.probes"]

TESTS = Path(__file__).resolve().parent
# Folders whose tests assert on wall-clock figures. Under xdist (--dist=loadgroup) each kind runs in a
# group of its own, one test at a time:
# - "timing": measured figures (the latency lab, the benchmarks' own checks, and tests marked `timing`
#   elsewhere: presets, signed overhead), which two measurements at once would disturb;
# - "deadlines": fault recovery and the hostile targets' one-minute bound: waits with slack, started
#   processes that sleep most of the time, never two at once (each restarts its own daemons), but allowed
#   beside a measurement as any other test is (docs/decisions.md, "Two serial groups").
# Either still shares the machine with the other process's tests: their bands allow for it.
TIMING_FOLDERS = {"wan", "faults", "hostile_targets", "bench"}
DEADLINE_FOLDERS = {"faults", "hostile_targets"}
BROWSER_FOLDERS = {"e2e", "browser", "probes", "reports"}   # reports: PDFs are printed by Chromium
BROWSER_FILES = {"ssrf/test_browser.py", "ssrf/test_browser_webrtc.py"}
WORKER_FIXTURES = {"start_worker_on", "browser_worker"}
# Files whose tests start daemons, servers or whole processes (tens of seconds each): left out of the fast
# lane (make test-fast), in every full run.
SLOW_FILES = {"api/test_schema.py", "api/test_idempotency.py", "api/test_throttle.py", "tls/test_scan_pool.py",
              "starttls/test_starttls_services.py", "starttls/test_starttls_hostile.py", "test_readme_commands.py",
              "loadtests/test_ownership_attacks.py", "load/test_loadgen_failures.py", "load/test_fast_engine.py",
              "tls/test_version_refusals.py", "load/test_handshake.py", "tls/test_revocation.py",
              "test_audit_cli.py", "security/test_deploy_settings.py", "perf/test_seed_demo.py",
              "tls/test_resumption.py", "tls/test_notices.py", "test_make_run_stop.py", "tls/test_suite_offers.py",
              "test_xdist_groups.py", "load/test_handshake_cli.py", "load/test_loadtest_cli.py",
              "tls/test_verdict_wording.py"}


@pytest.hookimpl(tryfirst=True)   # before xdist's own, which reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """Markers by what a test uses, so `make test-fast` can leave the slow kinds out and xdist can keep
    the timing-sensitive ones apart (--dist=loadgroup)."""
    for item in items:
        path = Path(str(item.fspath)).resolve().relative_to(TESTS)
        folder = path.parts[0]
        if folder in TIMING_FOLDERS or item.get_closest_marker("timing"):
            item.add_marker(pytest.mark.timing)
            item.add_marker(pytest.mark.xdist_group("deadlines" if folder in DEADLINE_FOLDERS else "timing"))
        if folder == "faults":
            item.add_marker(pytest.mark.faults)
        if folder in BROWSER_FOLDERS or path.as_posix() in BROWSER_FILES or item.get_closest_marker("e2e"):
            item.add_marker(pytest.mark.browser)
        if path.as_posix() in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if WORKER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.worker)


def pytest_collection_finish(session):
    """pytest-xdist groups by a suffix it writes into each node id; pytest 9.2 ignores that write
    (pytest-xdist #1386), and the groups silently vanish: the timing tests then run beside one another.
    Refuse to run like that."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in session.items
            if item.get_closest_marker("xdist_group") and "@" not in item.nodeid.rsplit("]", 1)[-1]]
    if lost:
        raise pytest.UsageError(f"--dist=loadgroup lost its groups ({lost[0]} has no @group suffix): this pytest "
                                "and pytest-xdist disagree on node ids (pytest-xdist #1386). Keep pytest below 9.2 "
                                "(requirements.in) until pytest-xdist supports it.")


@pytest.fixture(autouse=True, scope="session")
def _real_services_only():
    # The suite's promise is real parts: refuse to run on SQLite or the filesystem broker.
    if not settings.configured:  # pure-domain runs with -p no:django
        return
    engine = settings.DATABASES["default"]["ENGINE"]
    assert "postgresql" in engine, f"tests need PostgreSQL (DATABASE_URL), got {engine}: run `make test`"
    assert settings.CELERY_BROKER_URL.startswith("redis://"), "tests need Redis (REDIS_URL): run `make test`"


@pytest.fixture(autouse=True)
def _logging_as_configured():
    """Each test starts with logging as the settings configure it. In a full run with the groups, four
    caplog tests on one process saw nothing logged at all after earlier tests (cause not pinned down: no test
    of ours disables a logger or raises a level); whatever changed the state is undone here."""
    logging.disable(logging.NOTSET)
    root = logging.getLogger()
    if root.level > logging.INFO:
        root.setLevel(logging.INFO)
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and name.startswith(("tlsaudit", "workers")):
            logger.disabled, logger.propagate = False, True
    yield


@pytest.fixture(autouse=True)
def _the_lab_outlives_each_test():
    """A test during which the session's nginx lab died fails by name (then the lab is up again)."""
    from tests.support.tls_servers import SESSION_LABS, lab_death

    yield
    for lab in SESSION_LABS:
        if (death := lab_death(lab)) is not None:
            pytest.fail(death)


# Argon2 costs ~0.4 s a password: with a user or two per test it was a fifth of the suite. Tests whose
# subject is hashing ask for `production_hashers`; tests/test_settings.py checks production's list.
FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Every wait a test would sit through, shortened: the code path is the same, the countdown shorter.
SHORT_WAITS = {"AUDIT_LOCK_WAIT_SECONDS": 1, "LOAD_LOCK_WAIT_SECONDS": 1, "PROBE_LOCK_WAIT_SECONDS": 1,
               "AUDIT_SECOND_LOOK_SLACK_SECONDS": 0.5}


@pytest.fixture(autouse=True, scope="session")
def _fast_hashing_and_short_waits():
    if not settings.configured:
        yield
        return
    with override_settings(PASSWORD_HASHERS=FAST_HASHERS, **SHORT_WAITS):
        yield


@pytest.fixture
def production_hashers(settings):
    """The hashers production uses (Argon2 first), for a test about hashing itself."""
    import tlsaudit.settings as production

    settings.PASSWORD_HASHERS = production.PASSWORD_HASHERS
    return production.PASSWORD_HASHERS


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    # Cache-counted limits (sign-ups per IP) start from zero in every test, as the database does.
    if settings.configured and "redis" in settings.CACHES["default"]["BACKEND"].lower():
        from tlsaudit.core.ratelimits import clear_counters

        clear_counters()


@pytest.fixture
def alice(db):
    return make_user("alice@agency-a.test", full_name="Alice Owner")


@pytest.fixture
def bob(db):
    return make_user("bob@agency-a.test", full_name="Bob Viewer")


@pytest.fixture
def charlie(db):
    return make_user("charlie@agency-b.test", full_name="Charlie Owner")


@pytest.fixture
def org_a(alice, bob):
    from tlsaudit.domain import roles
    from tlsaudit.orgs.models import Membership, Organization

    org = Organization.objects.create(name="Agency A")
    Membership.objects.create(organization=org, user=alice, role=roles.OWNER)
    Membership.objects.create(organization=org, user=bob, role=roles.VIEWER)
    return org


@pytest.fixture
def org_b(charlie):
    from tlsaudit.domain import roles
    from tlsaudit.orgs.models import Membership, Organization

    org = Organization.objects.create(name="Agency B")
    Membership.objects.create(organization=org, user=charlie, role=roles.OWNER)
    return org


@pytest.fixture
def site_a(org_a, alice):
    return added_site(organization=org_a, hostname="shop.example.com", name="Shop", created_by=alice)


@pytest.fixture
def site_b(org_b, charlie):
    return added_site(organization=org_b, hostname="secret.example.org", name="Secret", created_by=charlie)



@pytest.fixture
def login(client):
    """login(user) -> the Django test client logged in as that user."""
    def _login(user):
        client.force_login(user)
        return client
    return _login


@pytest.fixture
def start_audit_worker(start_worker_on):
    return lambda: start_worker_on(("default", "scan"))


@pytest.fixture
def audit_worker(start_audit_worker):
    return start_audit_worker()


@pytest.fixture
def lab_org(org_a, tls_lab):
    """Agency A trusts the TLS lab's CA, as an organization with an internal PKI would."""
    org_a.custom_ca_pem = tls_lab.ca_file.read_text()
    org_a.save()
    return org_a
