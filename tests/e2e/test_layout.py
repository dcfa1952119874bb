"""Every page fits a 390 px phone and a 1366 px laptop (issue 17 item 11), in Debian's Chromium.

The pages are filled by `seed_demo` (audits, history, load and handshake runs, browser probes,
alerts), so the long tables and charts are there. On each page, at each width:
  - nothing is wider than the viewport (document.scrollWidth): a wide table scrolls inside its card;
  - every link of the navigation bar is on screen and readable (inside the viewport, not clipped,
    white on the bar, not on the light page);
  - no step of a run's step list is wider than its line (long suite names ran into the next column);
  - no chart's error bar is drawn outside its plot area (static/js/intervals.js records any).
"""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tests.support.personas import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

WIDTHS = (390, 1366)

# Layout facts read in the page: how wide the document is, and where each navigation link sits.
MEASURE = """() => {
  const nav = [...document.querySelectorAll('.topbar a, .topbar summary, .topbar button')];
  const bar = document.querySelector('.topbar').getBoundingClientRect();
  return {
    width: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
    // Links inside a closed menu (the organization switcher) are not on screen until it opens.
    nav: nav.filter(e => e.offsetParent !== null && !e.closest('details:not([open]) > :not(summary)')).map(e => {
      const r = e.getBoundingClientRect();
      return {text: e.textContent.trim().slice(0, 30), left: r.left, right: r.right, top: r.top,
              bottom: r.bottom, inBar: r.top >= bar.top - 1 && r.bottom <= bar.bottom + 1,
              hidden: r.width === 0 || r.height === 0};
    }),
    // A step of a run (its suite names are long words) wider than its own line: it overlapped the next column.
    steps: [...document.querySelectorAll('.checks li')].filter(e => e.scrollWidth > e.clientWidth + 1)
             .map(e => e.textContent.trim().slice(0, 50)).slice(0, 3),
    // A table wider than its box with no scrolling box around it is cut off (#30 item 9).
    cut: [...document.querySelectorAll('main table')].filter(t => {
      const box = t.parentElement;
      if (t.scrollWidth <= box.clientWidth + 1) return false;
      for (let e = t; e && e.tagName !== 'MAIN'; e = e.parentElement) {
        if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX)) return false;
      }
      return true;
    }).map(t => (t.dataset.testid || t.className || 'table')).slice(0, 5),
    wide: [...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1
            && !e.closest('.scroll-x, .card, .table-wrap, pre')).map(e => e.tagName + '.' + e.className).slice(0, 5),
  };
}"""


@pytest.fixture
def seeded(live_server):
    """One seeded organization: its owner, a site with audits, runs and a probe, and a report."""
    from tlsaudit.audits.models import Audit
    from tlsaudit.loadtests.models import PerfRun
    from tlsaudit.orgs.models import Organization
    from tlsaudit.probes.models import Probe
    from tlsaudit.reports.models import Report

    call_command("seed_demo", "--orgs", "1", "--sites", "6", "--days", "20", "--seed", "4",
                 "--password", PASSWORD, stdout=open("/dev/null", "w"))
    org = Organization.objects.filter(slug__startswith="seed-").first()
    # One finished run of each kind the seeder drew (its first site always gets at least a sweep).
    runs = {run.kind: run for run in PerfRun.objects.filter(organization=org, status="done").order_by("-pk")}
    probe = Probe.objects.filter(organization=org, status="done").first()
    audit = Audit.objects.filter(organization=org, status="done").order_by("-finished_at").first()
    failed = Audit.objects.filter(organization=org, status="failed").first()
    report = Report.objects.create(organization=org, site=audit.site, kind="site", status="queued")
    owner = org.memberships.get(role="owner").user
    assert runs and probe is not None, "seed_demo drew no performance run or probe"
    return {"org": org, "owner": owner, "audit": audit, "failed": failed, "runs": runs, "probe": probe,
            "report": report}


def pages(o: dict) -> dict[str, str]:
    org = o["org"].slug

    def at(name, **kwargs):
        return reverse(name, kwargs={"org": org, **kwargs})

    audit = o["audit"]
    site = audit.site_id
    found = {
        "sites": at("sites:list"), "add site": at("sites:add"), "import sites": at("sites:import"),
        "site": at("sites:detail", pk=site), "edit site": at("sites:edit", pk=site),
        "audit report": at("audits:detail", pk=site, audit_id=audit.pk),
        "history": at("monitoring:history", pk=site), "portfolio": at("monitoring:portfolio"),
        "performance": at("loadtests:overview", pk=next(iter(o["runs"].values())).site_id),
        "ownership": at("loadtests:verification", pk=site),
        "browser probes": at("probes:overview", pk=o["probe"].site_id),
        "browser probe": at("probes:detail", pk=o["probe"].site_id, probe_id=o["probe"].pk),
        "report": at("reports:detail", report_id=o["report"].pk),
        "members & settings": at("orgs:settings"), "alerts": at("alerts:settings"),
        "API keys": at("api_keys:list"), "audit log": at("audit_log"),
        "new organization": reverse("orgs:create"), "password": reverse("password_change"),
    }
    for kind, run in o["runs"].items():
        found[f"{kind} run"] = at("loadtests:run", pk=run.site_id, run_id=run.pk)
    if o["failed"] is not None:
        found["failed audit"] = at("audits:detail", pk=o["failed"].site_id, audit_id=o["failed"].pk)
    return found


PUBLIC_PAGES = {"landing": "home", "log in": "login", "sign up": "signup", "password reset": "password_reset",
                "API docs": "api:docs"}
# Pages of their own (no navigation bar): the API reference is the schema viewer's page.
WITHOUT_BAR = {"API docs"}


def signed_in_context(browser, live_server, user, width: int):
    client = Client()
    client.force_login(user)
    context = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": 800},
                                  locale="en-US")
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                          "url": live_server.url}])
    return context


def check_fits(page, name: str, width: int) -> list[str]:
    """Problems of the page now open, in words (empty: it fits)."""
    if name in WITHOUT_BAR:
        width_now = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        return [f"{name} @ {width}px: the page is {width_now[0]} px wide"] if width_now[0] > width_now[1] + 1 else []
    facts = page.evaluate(MEASURE)
    problems = []
    if facts["width"] > facts["viewport"] + 1:
        problems.append(f"{name} @ {width}px: the page is {facts['width']} px wide ({facts['wide']})")
    for link in facts["nav"]:
        if link["hidden"]:
            continue
        if link["right"] > facts["viewport"] + 1 or link["left"] < -1 or not link["inBar"]:
            problems.append(f"{name} @ {width}px: navigation '{link['text']}' is off the bar ({link})")
    if facts["cut"]:
        problems.append(f"{name} @ {width}px: tables cut off instead of scrolling: {facts['cut']}")
    if facts["steps"]:
        problems.append(f"{name} @ {width}px: steps wider than their line: {facts['steps']}")
    # An interval wider than the axis is cut at the plot's edge with an arrow (its values in the tooltip);
    # one drawn past the edge, or cut without an arrow, is a problem.
    clipped = page.evaluate("() => window.tlsauditClippedErrorBars || []")
    outside = [c for c in clipped if c["top"] < c["area"][0] - 1 or c["bottom"] > c["area"][1] + 1
               or not any(c["arrows"])]
    if outside:
        problems.append(f"{name} @ {width}px: error bars drawn outside the plot: {outside}")
    flat = [c for c in page.evaluate(AXES) if c["decades"] >= 2 and c["type"] != "logarithmic"]
    if flat:
        problems.append(f"{name} @ {width}px: values spanning two decades or more on a linear axis: {flat}")
    return problems


# Every chart with intervals (static/js/intervals.js): its points' span in decades and its value axis.
AXES = """() => [...document.querySelectorAll('canvas')].map(c => window.Chart && Chart.getChart(c))
  .filter(chart => chart && chart.data.datasets.some(d => d.intervals) && chart.scales.y && !chart.options.scales.y.stacked)
  .map(chart => {
    const points = chart.data.datasets.flatMap(d => (d.data || []).filter(v => typeof v === 'number'));
    const positive = points.length && Math.min(...points) > 0;
    return {chart: chart.canvas.id, type: chart.scales.y.type,
            decades: positive ? Math.log10(Math.max(...points) / Math.min(...points)) : 0};
  })"""


def test_values_that_span_decades_get_a_log_axis_and_the_rest_a_linear_one(browser, live_server, alice):
    """The rule the page check above applies, on the chart code the pages load: a loopback HTTP median
    of 0.05 ms beside an HTTPS one of 20 ms on a log axis; 110 to 11,000 req/s too; 40 beside 60 not;
    a negative change never (no log of it)."""
    context = signed_in_context(browser, live_server, alice, 1280)
    page = context.new_page()
    visit(page, "/")
    page.add_script_tag(url="/static/js/intervals.js")
    axis = "spec => (window.intervalRange(spec).type || 'linear')"
    assert page.evaluate(axis, {"datasets": [{"data": [0.05, 20]}]}) == "logarithmic"
    assert page.evaluate(axis, {"datasets": [{"data": [900]}, {"data": [11000, 110]}]}) == "logarithmic"
    assert page.evaluate(axis, {"datasets": [{"data": [40, 60], "intervals": [[1, 500], None]}]}) == "linear"
    assert page.evaluate(axis, {"datasets": [{"data": [-14.8, 1000]}]}) == "linear"
    context.close()


def visit(page, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")


# Pages photographed on a phone for docs/screenshots (the README shows the laptop ones).
PHONE_SHOTS = {"sites": "phone-sites.png", "audit report": "phone-audit-report.png",
               "portfolio": "phone-portfolio.png", "browser probe": "phone-browser-probe.png",
               "handshakes run": "phone-handshakes.png", "sweep run": "phone-sweep.png"}


@pytest.mark.parametrize("width", WIDTHS)
def test_every_signed_in_page_fits_the_screen_with_its_navigation_visible(browser, live_server, seeded, width,
                                                                           screenshot_dir):
    context = signed_in_context(browser, live_server, seeded["owner"], width)
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    problems = []
    try:
        for name, url in pages(seeded).items():
            visit(page, url)
            assert page.locator(".topbar").is_visible(), name
            problems += check_fits(page, name, width)
            if width == 390 and name in PHONE_SHOTS:
                page.screenshot(path=screenshot_dir / PHONE_SHOTS[name], full_page=False)
    finally:
        context.close()
    assert not problems, "\n".join(problems)
    assert not errors, errors


@pytest.mark.parametrize("width", WIDTHS)
def test_every_public_page_fits_the_screen(browser, live_server, width):
    context = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": 800})
    page = context.new_page()
    problems = []
    try:
        for name, url_name in PUBLIC_PAGES.items():
            visit(page, reverse(url_name))
            problems += check_fits(page, name, width)
    finally:
        context.close()
    assert not problems, "\n".join(problems)


GRADES = ("A+", "A", "A-", "B", "C", "F", "T", "M")
BADGES = """() => [...document.querySelectorAll('.grade-big')].map(e => {
  const r = e.getBoundingClientRect(), inner = e.scrollWidth > e.clientWidth + 1;
  return {text: e.textContent.trim(), width: Math.round(r.width), height: Math.round(r.height), clipped: inner};
})"""


def test_the_big_grade_badge_is_a_72_px_square_for_every_grade_on_both_screens(browser, live_server, alice, site_a):
    """One-letter grades shrank to their letter (26 x 72 px) on the audit page: `.card > *` zeroes min-width."""
    from tests.test_audit_views import detail_url, done_audit
    from tlsaudit.audits.models import Audit

    audit = done_audit(site_a)
    site_a.last_audit, site_a.last_grade = audit, audit.grade
    site_a.save(update_fields=["last_audit", "last_grade"])
    urls = {"audit report": detail_url(audit), "site": reverse("sites:detail", args=[site_a.organization.slug,
                                                                                      site_a.pk])}
    wrong = []
    for width in WIDTHS:
        context = signed_in_context(browser, live_server, alice, width)
        page = context.new_page()
        for grade in GRADES:
            Audit.objects.filter(pk=audit.pk).update(grade=grade)
            type(site_a).objects.filter(pk=site_a.pk).update(last_grade=grade)
            for name, url in urls.items():
                visit(page, url)
                badges = page.evaluate(BADGES)
                assert [b["text"] for b in badges] == [grade], (name, badges)
                wrong += [(name, width, b) for b in badges
                          if (b["width"], b["height"]) != (72, 72) or b["clipped"]]
        context.close()
    assert not wrong, wrong
