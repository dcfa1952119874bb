"""The history page: score series, the diff between any two audits, last night's changes."""

from datetime import datetime, timedelta, timezone

import pytest
from django.urls import reverse

from tests.domain.factories import NOW, rsa_cert

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 3, 1, 2, 0, tzinfo=timezone.utc)


def history_url(site, **query):
    url = reverse("monitoring:history", args=[site.organization.slug, site.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def test_it_shows_the_grade_series_and_the_diff_of_the_last_two_audits(login, alice, site_a, done_audit):
    first = done_audit(site_a, at=T0)
    second = done_audit(site_a, at=T0 + timedelta(days=1), trigger="schedule",
                        protocols=("TLSv1.0", "TLSv1.2", "TLSv1.3"))
    response = login(alice).get(history_url(site_a))
    page = response.content.decode()
    points = response.context["chart"]["points"]
    assert [(p["id"], p["grade"], p["trigger"]) for p in points] == [(first.pk, "A+", "manual"),
                                                                    (second.pk, "B", "schedule")]
    # Plotted as grades (users think in grades), the score kept for the tooltip
    grades = response.context["chart"]["grades"]
    assert [grades[p["y"]] for p in points] == ["A+", "B"] and grades[:2] == ["M", "T"] and grades[-1] == "A+"
    assert [p["score"] for p in points] == [first.score, second.score]
    assert 'id="history-chart"' in page and "js/history.js" in page
    assert response.context["pair"] == (first, second)
    assert "+ TLSv1.0 added" in page and "TLS 1.0 is supported (cap B since January 2020)" in page and "cap.tls10_11" not in page
    assert 'data-testid="nightly-diff"' in page  # the scheduled run changed something


def test_any_two_audits_can_be_compared_in_either_order(login, alice, site_a, done_audit):
    old = done_audit(site_a, at=T0, cert=rsa_cert())
    done_audit(site_a, at=T0 + timedelta(days=1), cert=rsa_cert())
    new = done_audit(site_a, at=T0 + timedelta(days=2), cert=rsa_cert(not_after=NOW + timedelta(days=400)))
    response = login(alice).get(history_url(site_a, a=new.pk, b=old.pk))
    assert response.context["pair"] == (old, new)
    page = response.content.decode()
    assert 'data-testid="diff-certificate"' in page and "Certificate replaced" in page


def test_a_foreign_audit_id_falls_back_to_the_last_two(login, alice, site_a, site_b, done_audit):
    mine = [done_audit(site_a, at=T0 + timedelta(days=i)) for i in range(3)]
    theirs = done_audit(site_b, at=T0)
    response = login(alice).get(history_url(site_a, a=theirs.pk, b=mine[0].pk))
    assert response.context["pair"] == (mine[1], mine[2])
    assert "Nothing changed." in response.content.decode()


def test_an_unchanged_nightly_run_shows_no_nightly_diff(login, bob, site_a, done_audit):
    done_audit(site_a, at=T0)
    done_audit(site_a, at=T0 + timedelta(days=1), trigger="schedule")
    page = login(bob).get(history_url(site_a)).content.decode()  # a viewer reads it too
    assert 'data-testid="nightly-diff"' not in page and 'data-testid="history-audits"' in page


def test_empty_and_single_audit_histories(login, alice, site_a, done_audit):
    client = login(alice)
    assert 'data-testid="no-history"' in client.get(history_url(site_a)).content.decode()
    done_audit(site_a, at=T0)
    assert 'data-testid="one-audit"' in client.get(history_url(site_a)).content.decode()


def test_charlie_gets_404_for_agency_a_history(login, charlie, site_a, site_b, done_audit):
    done_audit(site_a, at=T0)
    client = login(charlie)
    assert client.get(history_url(site_a)).status_code == 404
    # His own org in the URL with A's site id: still 404.
    assert client.get(reverse("monitoring:history", args=[site_b.organization.slug, site_a.pk])).status_code == 404
    assert client.get(history_url(site_b)).status_code == 200


def test_the_history_tab_links_to_the_page(login, alice, site_a):
    page = login(alice).get(reverse("probes:overview", args=[site_a.organization.slug, site_a.pk])).content.decode()
    assert history_url(site_a) in page
