"""The site page summarises what changed between the last two finished audits, only when something did."""

from datetime import datetime, timedelta, timezone

import pytest
from django.urls import reverse

from tests.domain.factories import NOW, rsa_cert
from tlsaudit.audits.models import Audit

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 3, 1, 2, 0, tzinfo=timezone.utc)
OLD = ("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3")
CARD = 'data-testid="since-previous"'


def detail(client, site):
    response = client.get(site.get_absolute_url())
    assert response.status_code == 200
    return response, response.content.decode()


def test_a_worse_nightly_run_is_summarised_with_a_link_to_the_full_diff(login, alice, site_a, done_audit):
    old = done_audit(site_a, at=T0)
    new = done_audit(site_a, at=T0 + timedelta(days=1), trigger="schedule", protocols=OLD)
    response, page = detail(login(alice), site_a)
    assert CARD in page and "Since the previous audit" in page
    assert response.context["since_previous"][:2] == (old, new)
    assert 'data-testid="since-grade">Grade A+ → <b>B</b> <span class="error">worse</span>' in page
    assert "TLS 1.0 and TLS 1.1 are supported" in page
    assert 'data-testid="since-protocols">Protocols: +TLSv1.0 +TLSv1.1</li>' in page
    assert 'data-testid="since-appeared">New problems:' in page
    assert 'data-testid="since-certificate"' not in page and 'data-testid="since-fixed"' not in page
    history = reverse("monitoring:history", args=[site_a.organization.slug, site_a.pk])
    assert f'href="{history}?a={old.pk}&amp;b={new.pk}"' in page
    # The link opens exactly that pair on the History page.
    assert login(alice).get(f"{history}?a={old.pk}&b={new.pk}").context["pair"] == (old, new)


def test_a_fix_shows_what_was_fixed_and_the_better_grade(login, bob, site_a, done_audit):
    done_audit(site_a, at=T0, protocols=OLD)
    done_audit(site_a, at=T0 + timedelta(days=1), trigger="schedule")
    _, page = detail(login(bob), site_a)  # viewers read it too
    assert CARD in page
    assert 'data-testid="since-grade">Grade B → <b>A+</b> <span class="ok">better</span>' in page
    assert 'data-testid="since-protocols">Protocols: −TLSv1.0 −TLSv1.1</li>' in page
    assert 'data-testid="since-fixed">Fixed:' in page and 'data-testid="since-appeared"' not in page


def test_a_replaced_certificate_is_shown_even_when_the_grade_is_the_same(login, alice, site_a, done_audit):
    done_audit(site_a, at=T0, cert=rsa_cert())
    done_audit(site_a, at=T0 + timedelta(days=1), trigger="schedule",
               cert=rsa_cert(not_after=NOW + timedelta(days=400)))
    _, page = detail(login(alice), site_a)
    assert CARD in page and 'data-testid="since-certificate">Certificate replaced' in page
    assert 'data-testid="since-grade"' not in page
    assert (NOW + timedelta(days=400)).date().isoformat() in page


def test_no_card_when_nothing_changed_or_nothing_to_compare(login, alice, site_a, done_audit):
    client = login(alice)
    _, page = detail(client, site_a)
    assert CARD not in page  # never audited
    done_audit(site_a, at=T0)
    response, page = detail(client, site_a)
    assert CARD not in page and response.context["since_previous"] is None  # one audit only
    done_audit(site_a, at=T0 + timedelta(days=1), trigger="schedule")
    response, page = detail(client, site_a)
    assert CARD not in page and response.context["since_previous"] is None  # the same result again


def test_it_compares_the_last_two_done_audits_ignoring_failed_ones(login, alice, site_a, done_audit):
    done_audit(site_a, at=T0)
    done_audit(site_a, at=T0 + timedelta(days=1), protocols=OLD)
    done_audit(site_a, at=T0 + timedelta(days=2), protocols=OLD)  # the latest pair is unchanged
    Audit.objects.create(site=site_a, organization=site_a.organization, status="failed", trigger="schedule",
                         error_message="connection refused")
    _, page = detail(login(alice), site_a)
    assert CARD not in page


def test_charlie_sees_no_card_because_he_gets_404(login, charlie, site_a, done_audit):
    done_audit(site_a, at=T0)
    done_audit(site_a, at=T0 + timedelta(days=1), protocols=OLD)
    assert login(charlie).get(site_a.get_absolute_url()).status_code == 404
