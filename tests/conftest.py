"""Shared fixtures. Personas, as in healthchecks: alice owns agency A, bob is a viewer in A,
charlie owns agency B. Tests run on the real PostgreSQL and Redis (see Makefile: make test)."""

from contextlib import ExitStack

import pytest
from django.conf import settings

from tests.support.tls_servers import *  # noqa: F401,F403  (tls_lab: the local TLS servers)
from tests.support.wan import wan, wan_links  # noqa: F401  (the latency lab: local servers behind a WAN link)

PASSWORD = "correct horse battery staple"


@pytest.fixture(autouse=True, scope="session")
def _real_services_only():
    # The suite's promise is real parts: refuse to run on SQLite or the filesystem broker.
    if not settings.configured:  # pure-domain runs with -p no:django
        return
    engine = settings.DATABASES["default"]["ENGINE"]
    assert "postgresql" in engine, f"tests need PostgreSQL (DATABASE_URL), got {engine}: run `make test`"
    assert settings.CELERY_BROKER_URL.startswith("redis://"), "tests need Redis (REDIS_URL): run `make test`"


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    # Cache-counted limits (sign-ups per IP) start from zero in every test, as the database does.
    if settings.configured and "redis" in settings.CACHES["default"]["BACKEND"].lower():
        from tlsaudit.core.ratelimits import clear_counters

        clear_counters()


def make_user(email, **extra):
    from tlsaudit.accounts.models import User

    return User.objects.create_user(email=email, password=PASSWORD, email_verified=True, **extra)


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
    from tlsaudit.sites.models import Site

    return Site.objects.create(organization=org_a, hostname="shop.example.com", name="Shop", created_by=alice)


@pytest.fixture
def site_b(org_b, charlie):
    from tlsaudit.sites.models import Site

    return Site.objects.create(organization=org_b, hostname="secret.example.org", name="Secret", created_by=charlie)


@pytest.fixture
def login(client):
    """login(user) -> the Django test client logged in as that user."""
    def _login(user):
        client.force_login(user)
        return client
    return _login


@pytest.fixture
def start_worker_on():
    """start_worker_on(queues, concurrency) runs a real Celery worker (threads pool, the real
    Redis) until the test ends. Tests start it when they choose, e.g. after a page shows a
    queued audit."""
    from celery.contrib.testing.worker import start_worker

    import workers.tasks  # noqa: F401  register the tasks in this process
    from workers.celery import app

    app.control.purge()
    with ExitStack() as stack:
        def start(queues, concurrency=2):
            return stack.enter_context(start_worker(app, pool="threads", concurrency=concurrency,
                                                    perform_ping_check=False, queues=list(queues),
                                                    shutdown_timeout=60))
        yield start


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
