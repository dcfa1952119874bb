"""Every page takes a constant number of SQL queries, whatever the number of sites and audits.

Each test builds its page's data at two sizes (3 and 30 sites, audits, runs…) and asserts the
same bound, so a query per row (an N+1) fails at 30. Bounds count everything a request does:
session, user, membership, the organization switcher, then the page's own queries.
"""

from datetime import timedelta

import pytest
from django.urls import reverse

from tests.support.scale import T0

pytestmark = pytest.mark.django_db
SIZES = (3, 30)


def warm(client, url):
    """The first request of a session stores the visited organization; measure the ones after it."""
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    return client


@pytest.mark.parametrize("n", SIZES)
def test_the_site_list_with_every_filter_sort_and_page(n, login, alice, org_a, many_sites,
                                                        django_assert_max_num_queries):
    many_sites(org_a, n)
    base = reverse("sites:list", args=[org_a.slug])
    client = warm(login(alice), base)
    matching = sum(1 for i in range(n) if "site01" in f"site{i:03d}")
    for query, shown in (("", min(n, 25)), ("?q=SITE01&sort=-added", matching), ("?tag=eu&sort=name", None),
                         ("?sort=-port&page=2", None), ("?sort=nonsense&page=x", min(n, 25))):
        # 9, + 1: the page's queued or running audits, + 1: which of them wait for a free slot, + 2: the hourly
        # limit shown before "Audit all" (audits started in the last hour, audits in line)
        with django_assert_max_num_queries(13):
            response = client.get(base + query)
        assert response.status_code == 200
        if shown is not None:
            assert len(response.context["page"].object_list) == shown, query


@pytest.mark.parametrize("n", SIZES)
def test_the_site_page_with_its_latest_audits(n, login, alice, site_a, history, django_assert_max_num_queries):
    audits = history(site_a, n)
    url = reverse("sites:detail", args=[org_slug(site_a), site_a.pk])
    client = warm(login(alice), url)
    # + the latest report's recommendations, the probe, handshake run and load run they are priced from (#26),
    # + the latest leaf and its CA's renewal window (#29)
    with django_assert_max_num_queries(14):
        response = client.get(url)
    assert len(response.context["audits"]) == min(n, 20)
    assert response.context["latest"].pk == audits[-1].pk


@pytest.mark.parametrize("n", SIZES)
def test_an_audit_report(n, login, alice, site_a, history, django_assert_max_num_queries):
    audits = history(site_a, n)
    client = login(alice)
    for audit in (audits[0], audits[-1]):
        url = reverse("audits:detail", args=[org_slug(site_a), site_a.pk, audit.pk])
        warm(client, url)
        with django_assert_max_num_queries(9):   # + the probe, handshake run and load run (visitor time, #26)
            response = client.get(url)
        assert response.context["grade"]["grade"] == audit.grade


@pytest.mark.parametrize("n", SIZES)
def test_the_history_page_chart_and_diffs(n, login, alice, site_a, history, django_assert_max_num_queries):
    audits = [a for a in history(site_a, n) if a.status == "done"]
    url = reverse("monitoring:history", args=[org_slug(site_a), site_a.pk])
    client = warm(login(alice), url)
    for query in ("", f"?a={audits[0].pk}&b={audits[-1].pk}"):
        with django_assert_max_num_queries(10):   # + the leaves of every audit and the renewal share (#29)
            response = client.get(url + query)
        assert len(response.context["chart"]["points"]) == len(audits)
        assert response.context["pair"] is not None


@pytest.mark.parametrize("n", SIZES)
def test_the_portfolio_and_its_filters(n, login, alice, org_a, many_sites, django_assert_max_num_queries):
    many_sites(org_a, n)
    url = reverse("monitoring:portfolio", args=[org_a.slug])
    client = warm(login(alice), url)
    for query in ("", "?tag=eu", "?grade=B", "?tag=shop&grade=A%2B"):
        # The page of rows and its tags, the counts in one aggregate, the two expiry lists (#16), the
        # scheduled sites' addresses for the crowded-address check (#27), the renewal share the forecast states (#29),
        # the organization's schedules per minute apart from its window policy (#36: as one correlated query,
        # PostgreSQL counted every organization's schedules).
        with django_assert_max_num_queries(14):
            response = client.get(url + query)
        assert response.status_code == 200
    assert len(client.get(url).context["rows"]) == n


@pytest.mark.parametrize("n", SIZES)
def test_the_alerts_page_with_its_recent_events(n, login, alice, org_a, many_sites, django_assert_max_num_queries):
    from tlsaudit.alerts.models import AlertEvent

    for i, site in enumerate(many_sites(org_a, n)):
        AlertEvent.objects.create(organization=org_a, site=site, kind="grade_dropped", dedupe_key=f"k{i}",
                                  title="Grade dropped from A+ to B")
    url = reverse("alerts:settings", args=[org_a.slug])
    client = warm(login(alice), url)
    with django_assert_max_num_queries(8):
        response = client.get(url)
    assert len(response.context["events"]) == min(n, 20)


@pytest.mark.parametrize("n", SIZES)
def test_the_performance_tab_and_a_sweep(n, login, alice, site_a, perf_runs, django_assert_max_num_queries):
    runs = perf_runs(site_a, n)
    client = login(alice)
    overview = reverse("loadtests:overview", args=[org_slug(site_a), site_a.pk])
    warm(client, overview)
    with django_assert_max_num_queries(10):   # 9, + 1 for an unproven site: a proof of its host on another port
        response = client.get(overview)
    assert len(response.context["runs"]) == min(n, 20)
    run_url = reverse("loadtests:run", args=[org_slug(site_a), site_a.pk, runs[0].pk])
    with django_assert_max_num_queries(6):
        response = client.get(run_url)
    assert [c["id"] for c in response.context["charts"]][:3] == ["rps-new", "time-new", "overhead-new"]


@pytest.mark.parametrize("n", SIZES)
def test_the_browser_tab_and_a_probe(n, login, alice, site_a, probes, django_assert_max_num_queries):
    made = probes(site_a, n)
    client = login(alice)
    overview = reverse("probes:overview", args=[org_slug(site_a), site_a.pk])
    warm(client, overview)
    with django_assert_max_num_queries(7):
        response = client.get(overview)
    assert len(response.context["probes"]) == min(n, 20)
    assert response.context["increase"] is not None
    with django_assert_max_num_queries(6):
        response = client.get(reverse("probes:detail", args=[org_slug(site_a), site_a.pk, made[0].pk]))
    assert response.context["page_table"] is not None


@pytest.mark.parametrize("n", SIZES)
def test_the_portfolio_pdf_html(n, org_a, many_sites, django_assert_max_num_queries):
    from tlsaudit.reports import presenters, services

    many_sites(org_a, n)
    with django_assert_max_num_queries(2):
        html = services.render_with_assets("reports/portfolio_report.html", presenters.portfolio_report(org_a))
    assert html.count("site0") >= min(n, 10)


@pytest.mark.parametrize("n", SIZES)
def test_the_site_pdf_html(n, site_a, history, perf_runs, probes, django_assert_max_num_queries):
    from tlsaudit.reports import services

    history(site_a, n)
    perf_runs(site_a, 1)
    probes(site_a, 1)
    with django_assert_max_num_queries(8):   # + the probe and runs the visitor times come from (#26)
        html = services.site_html(site_a)
    assert "Grade history" in html


def test_a_year_of_history_is_one_light_query(site_a, history, django_assert_max_num_queries):
    """The history's list of audits carries none of their JSON (facts, report, sslyze's output)."""
    from tlsaudit.monitoring.history import done_audits

    history(site_a, 12)
    with django_assert_max_num_queries(1) as captured:
        audits = done_audits(site_a)
    sql = captured.captured_queries[0]["sql"]
    assert len(audits) == 11 and '"facts"' not in sql and '"report"' not in sql and '"raw"' not in sql
    assert [a.finished_at for a in audits] == sorted(a.finished_at for a in audits)
    assert audits[-1].finished_at == T0 + timedelta(days=11)


def org_slug(site):
    return site.organization.slug
