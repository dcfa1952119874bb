"""An agency's integration, as issue 19 tells it: a Python client generated from docs/openapi.yaml by
openapi-python-client (at test time, into a temporary directory), driving the whole flow against gunicorn
on the test database, a real Celery worker and the lab's TLS server. Every call goes through the
generated client: if the schema misdescribes an answer (a CSV typed as JSON, a PDF dropped, a field
`?fields=` leaves out marked required), the client raises here as it would for them.

The only step outside the API is the ownership proof a load test needs: the test serves the proof file
on the site's HTTP port and asks the server-side check to read it, as the dashboard's button does."""

import csv
import importlib
import io
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.support.api import make_key
from tests.support.loadtests import http_server
from tests.support.web import Gunicorn

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "docs" / "openapi.yaml"
LAB_SERVER = "a_plus_ecdsa_tls13_hsts"
CONFIG = """project_name_override: tlsaudit-client
package_name_override: tlsaudit_client
post_hooks: []
"""


def database_url() -> str:
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The package openapi-python-client writes for docs/openapi.yaml, imported (nothing is committed)."""
    out = tmp_path_factory.mktemp("client")
    (out / "config.yaml").write_text(CONFIG)
    started = time.monotonic()
    run = subprocess.run([str(Path(sys.executable).parent / "openapi-python-client"), "generate", "--path",
                          str(SCHEMA), "--output-path", str(out / "tlsaudit_client"), "--meta", "none",
                          "--config", str(out / "config.yaml"), "--fail-on-warning"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    print(f"client generated in {time.monotonic() - started:.1f} s")
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module("tlsaudit_client")
    finally:
        sys.path.remove(str(out))
        for name in [name for name in sys.modules if name.startswith("tlsaudit_client")]:
            del sys.modules[name]


@pytest.fixture
def web(transactional_db, tmp_path):
    # The worker runs in this process: the server must read the files (PDFs) where it writes them.
    server = Gunicorn(database_url(), settings.REDIS_URL, tmp_path, workers=2, threads=4,
                      TLSAUDIT_VAR_DIR=str(settings.VAR_DIR))
    yield server
    server.kill()
    print(server.log())


class Api:
    """The generated modules under short names, and the client with the key."""

    def __init__(self, package, base_url: str, key: str):
        self.package = package
        self.client = package.AuthenticatedClient(base_url=base_url, token=key, timeout=60,
                                                  raise_on_unexpected_status=True)
        self.models = importlib.import_module("tlsaudit_client.models")
        self.types = importlib.import_module("tlsaudit_client.types")

    def op(self, name: str):
        tag = name.split("_")[0]
        return importlib.import_module(f"tlsaudit_client.api.{tag}.{name}")

    def call(self, name: str, *args, expect: int = 200, **kwargs):
        """The generated sync_detailed; the parsed body once the status is the one expected."""
        response = self.op(name).sync_detailed(*args, client=self.client, **kwargs)
        assert response.status_code == expect, (name, response.status_code, response.content[:2000])
        return response

    def poll(self, name: str, *args, until=lambda body: body.status.value in ("done", "failed"), timeout=240, **kw):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            body = self.call(name, *args, **kw).parsed
            if until(body):
                return body
            time.sleep(1)
        raise AssertionError(f"{name}{args} not finished after {timeout} s: {body}")


def rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.django_db(transaction=True)
def test_an_agency_runs_its_whole_flow_through_a_generated_client(generated, web, org_a, alice, tls_lab,
                                                                  start_worker_on):
    started = time.monotonic()
    base = web.start()
    start_worker_on(("default", "scan", "load", "browser"), concurrency=4)
    _, key = make_key(org_a, created_by=alice, rate_per_minute=100_000)
    api = Api(generated, base, key)
    m = api.models

    # The organization, and its custom CA (the lab's root) set through the API.
    assert api.call("organization_retrieve").parsed.slug == org_a.slug
    ca = api.call("organization_custom_ca_update", body=m.CustomCaWriteRequest(pem=tls_lab.ca_file.read_text()))
    assert len(ca.parsed.certificates) == 1 and ca.parsed.certificates[0].fingerprint_sha256

    proof_routes = {}
    with http_server(proof_routes) as proof_port:
        site = create_pinned_site(api, tls_lab, proof_port)
        bulk_edit_delete(api)
        audits = audit_twice_and_diff(api, site)
        prove_ownership(site.id, proof_routes)
        load_and_handshakes(api, site)
    probe = browser_probe(api, site)
    report_pdf(api, site)
    portfolio(api)
    hook = webhook_and_test_delivery(api, tls_lab)
    conditional_get(api, site)
    every_list_as_csv(api, site, audits, probe, hook)
    print(f"generated-client flow: {time.monotonic() - started:.0f} s")


def create_pinned_site(api, tls_lab, proof_port):
    m = api.models
    body = m.SiteWriteRequest(hostname=f"localhost:{tls_lab.port(LAB_SERVER)}", http_port=proof_port,
                              pinned_ip="127.0.0.1", name="Lab shop", tags=["client"])
    created = api.call("sites_create", body=body, expect=201)
    site = created.parsed
    assert created.headers["Location"] == site.url and site.pinned_ip == "127.0.0.1"
    assert int(created.headers["RateLimit-Limit"]) == 100_000
    # ?fields= trims the answer: the generated model takes the missing fields as unset.
    trimmed = api.call("sites_retrieve", site.id, fields=[m.SitesRetrieveFieldsItem.ID,
                                                            m.SitesRetrieveFieldsItem.HOSTNAME]).parsed
    assert (trimmed.id, trimmed.hostname) == (site.id, "localhost")
    assert isinstance(trimmed.pinned_ip, api.types.Unset) and isinstance(trimmed.url, api.types.Unset)
    return site


def bulk_edit_delete(api):
    m = api.models
    items = [m.BulkSitesRequestSitesItem.from_dict({"hostname": "bulk-one.example", "tags": ["bulk"]}),
             m.BulkSitesRequestSitesItem.from_dict({"hostname": "bulk-two.example"}),
             m.BulkSitesRequestSitesItem.from_dict({"hostname": "not a host name"})]
    result = api.call("sites_bulk_create", body=m.BulkSitesRequest(sites=items)).parsed
    assert (result.created, result.failed) == (2, 1)
    assert [r.created for r in result.results] == [True, True, False]
    assert result.results[2].error.code == "validation_error" and result.results[2].site is None
    one, two = result.results[0].site, result.results[1].site
    edited = api.call("sites_partial_update", one.id, body=m.PatchedSiteWriteRequest(name="Renamed",
                                                                                   tags=["bulk", "edited"])).parsed
    assert (edited.name, edited.tags) == ("Renamed", ["bulk", "edited"])
    api.call("sites_destroy", two.id, expect=204)
    api.call("sites_retrieve", two.id, expect=404)
    listed = api.call("sites_list", tag="bulk").parsed
    assert [s.hostname for s in listed.results] == ["bulk-one.example"]


def audit_twice_and_diff(api, site):
    m = api.models
    audits = []
    for attempt in range(2):
        started = api.call("sites_audits_create", site.id, idempotency_key=f"client-{site.id}-{attempt}", expect=202)
        assert started.headers["Location"] == started.parsed.url
        audits.append(api.poll("audits_retrieve", started.parsed.id))
    assert [a.status.value for a in audits] == ["done", "done"], [a.error_message for a in audits]
    full = api.call("audits_retrieve", audits[1].id, view=m.AuditsRetrieveView.FULL).parsed
    assert full.grade and full.findings and full.certificates
    assert any(trust.store == "Custom CA" and trust.trusted for trust in full.certificates[0].trust)
    # ?fields= may name any field: findings without ?view=full.
    only = api.call("audits_retrieve", audits[1].id, fields=[m.AuditsRetrieveFieldsItem.FINDINGS]).parsed
    assert len(only.findings) == len(full.findings) and isinstance(only.grade, api.types.Unset)
    diff = api.call("audits_diff_retrieve", audits[1].id, against=audits[0].id).parsed
    assert (diff.old.id, diff.new.id) == (audits[0].id, audits[1].id)
    return audits


def prove_ownership(site_id, routes):
    """The proof file served on the site's HTTP port, read by the server-side check (the dashboard's button)."""
    from tlsaudit.loadtests.verification import check_now, verification_for
    from tlsaudit.sites.models import Site

    site = Site.objects.get(pk=site_id)
    verification = verification_for(site)
    routes[verification.file_path] = (200, {}, verification.file_content + "\n")
    assert check_now(site, "http").is_verified


def load_and_handshakes(api, site):
    m = api.models
    load = api.call("sites_loadtests_create", site.id, expect=202, body=m.LoadRunRequestRequest(
        kind=m.LoadRunKindEnum.LOAD, requests=20, concurrency=2)).parsed
    done = api.poll("loadtests_retrieve", load.id)
    assert done.status.value == "done", done.error_message
    assert done.results and done.results[0].to_dict()["report"]
    shakes = api.call("sites_handshakes_create", site.id, expect=202, body=m.HandshakeRunRequestRequest(
        versions=[m.VersionsEnum.VALUE_1], agents_levels=[2], per_agent=200)).parsed
    stop = api.op("loadtests_stop_create").sync_detailed(shakes.id, client=api.client)
    assert stop.status_code in (200, 202), stop.content
    stopped = api.poll("loadtests_retrieve", shakes.id, until=lambda run: run.status.value not in ("queued", "running"))
    assert stopped.status.value in ("cancelled", "done"), stopped
    listed = api.call("sites_handshakes_list", site.id).parsed
    assert [run.id for run in listed.results] == [shakes.id]


def browser_probe(api, site):
    m = api.models
    started = api.call("sites_probes_create", site.id, expect=202, body=m.ProbeRequestRequest(
        runs=1, variants=[m.HttpSchemeEnum.HTTPS]))
    probe = api.poll("probes_retrieve", started.parsed.id)
    assert probe.status.value == "done", (probe.error_code, probe.error_message)
    assert probe.summary.to_dict()
    return probe


def report_pdf(api, site):
    m = api.models
    started = api.call("reports_create", body=m.ReportRequestRequest(site=site.id), expect=202).parsed
    report = api.poll("reports_retrieve", started.id)
    assert report.status.value == "done", report.error
    pdf = api.call("reports_pdf_retrieve", report.id)
    assert pdf.parsed.payload.read().startswith(b"%PDF-")
    again = api.client.with_headers({"If-None-Match": pdf.headers["ETag"]})
    assert api.op("reports_pdf_retrieve").sync_detailed(report.id, client=again).status_code == 304


def portfolio(api):
    summary = api.call("portfolio_retrieve", days=3650).parsed
    assert summary.sites == 2 and summary.audited == 1 and summary.by_grade.to_dict()


def webhook_and_test_delivery(api, tls_lab):
    m = api.models
    created = api.call("webhooks_create", expect=201, body=m.WebhookWriteRequest(
        url=f"https://localhost:{tls_lab.port(LAB_SERVER)}/hook"))
    hook = created.parsed
    assert hook.secret and created.headers["Location"] == hook.api_url
    api.call("webhooks_test_create", hook.id, idempotency_key=f"test-{hook.id}", expect=202)
    delivery = api.poll("webhooks_deliveries_list", hook.id,
                        until=lambda page: page.results and page.results[0].status.value != "pending").results[0]
    # The lab's server answers the POST, if its certificate (of our custom CA, not the public stores) is accepted.
    assert delivery.kind == "test" and delivery.status.value in ("ok", "failed"), delivery
    print(f"test delivery: {delivery.status.value} {delivery.response_code} {delivery.error}")
    return hook


def conditional_get(api, site):
    first = api.call("sites_retrieve", site.id)
    same = api.client.with_headers({"If-None-Match": first.headers["ETag"]})
    assert api.op("sites_retrieve").sync_detailed(site.id, client=same).status_code == 304
    page = api.call("sites_list")
    assert api.op("sites_list").sync_detailed(client=api.client.with_headers(
        {"If-None-Match": page.headers["ETag"]})).status_code == 304


def every_list_as_csv(api, site, audits, probe, hook):
    exports = {
        "sites_csv": api.call("sites_csv").parsed,
        "audits_csv": api.call("audits_csv").parsed,
        "sites_audits_csv": api.call("sites_audits_csv", site.id).parsed,
        "sites_loadtests_csv": api.call("sites_loadtests_csv", site.id).parsed,
        "sites_handshakes_csv": api.call("sites_handshakes_csv", site.id).parsed,
        "sites_probes_csv": api.call("sites_probes_csv", site.id).parsed,
        "reports_csv": api.call("reports_csv").parsed,
        "webhooks_csv": api.call("webhooks_csv").parsed,
        "webhooks_deliveries_csv": api.call("webhooks_deliveries_csv", hook.id).parsed,
    }
    counts = {name: len(rows(text)) for name, text in exports.items()}
    # A failed test delivery is retried: one row per attempt.
    attempts = counts.pop("webhooks_deliveries_csv")
    assert counts == {"sites_csv": 2, "audits_csv": 2, "sites_audits_csv": 2, "sites_loadtests_csv": 1,
                      "sites_handshakes_csv": 1, "sites_probes_csv": 1, "reports_csv": 1, "webhooks_csv": 1}, counts
    assert attempts >= 1 and {row["kind"] for row in rows(exports["webhooks_deliveries_csv"])} == {"test"}
    assert {int(row["id"]) for row in rows(exports["audits_csv"])} == {a.id for a in audits}
    assert rows(exports["sites_probes_csv"])[0]["id"] == str(probe.id)
    narrow = api.call("sites_csv", fields=[api.models.SitesCsvFieldsItem.HOSTNAME]).parsed
    assert narrow.splitlines()[0].strip() == "hostname"
