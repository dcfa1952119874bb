"""PDF reports over the API: ask for a site's or the portfolio's, poll it, download it once a real
browser worker printed it; 409 until then. Agency B sees none of it."""

import csv
import io

import pytest

from tests.api.factories import done_audit, queries_of
from tests.support.api import client_with, error_of, make_key
from tests.support.pdf import pdf_text
from tests.support.waiting import wait_finished as wait_until_finished
from tlsaudit.api import keys
from tlsaudit.reports import services
from tlsaudit.reports.models import Report

REPORTS = "/api/v1/reports/"


def detail(report) -> str:
    return f"/api/v1/reports/{report.pk}/"


def make_report(org, site=None, status="queued", **fields) -> Report:
    return Report.objects.create(organization=org, site=site, kind="site" if site else "portfolio", status=status,
                                 **fields)


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [r["id"] for r in response.json()["results"]]


# --- asking for one -------------------------------------------------------------------------------

def test_a_site_report_and_a_portfolio_report_are_queued_with_202(org_a, alice, site_a,
                                                                  django_capture_on_commit_callbacks):
    client = client_with(make_key(org_a, keys.READ_WRITE, "reports", created_by=alice)[1])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        site_report = client.post(REPORTS, {"site": site_a.pk}, format="json")
        portfolio = client.post(REPORTS, {}, format="json")
    assert (site_report.status_code, portfolio.status_code) == (202, 202)
    mine = Report.objects.get(kind="site")
    assert (mine.site, mine.status, mine.requested_by) == (site_a, "queued", alice)
    assert site_report["Location"] == detail(mine) and site_report.json()["download_url"] is None
    assert site_report.json()["filename"].startswith("tls-report-shop.example.com-")
    body = portfolio.json()
    assert (body["kind"], body["site"], body["site_url"]) == ("portfolio", None, None)
    assert len(callbacks) == 2


def test_asking_again_while_it_is_being_made_returns_the_same_report(api, site_a):
    first = api.post(REPORTS, {"site": site_a.pk}, format="json")
    again = api.post(REPORTS, {"site": site_a.pk}, format="json")
    assert again.status_code == 202 and again["Already-Active"] == "true"
    assert again.json()["id"] == first.json()["id"] and Report.objects.count() == 1
    assert api.post(REPORTS, {"site": None}, format="json").json()["kind"] == "portfolio"


@pytest.mark.parametrize("body", [{"site": "shop"}, {"site": 999999}, {"site": [1]}])
def test_an_unknown_site_answers_422(api, body):
    response = api.post(REPORTS, body, format="json")
    assert response.status_code == 422 and "site" in error_of(response)["fields"]
    assert not Report.objects.exists()


def test_another_organizations_site_is_unknown_too(api, site_b):
    response = api.post(REPORTS, {"site": site_b.pk}, format="json")
    assert response.status_code == 422 and "site" in error_of(response)["fields"]
    assert not Report.objects.exists()


def test_an_idempotency_key_asks_once(api, site_a):
    headers = {"HTTP_IDEMPOTENCY_KEY": "weekly-2026-10"}
    first = api.post(REPORTS, {"site": site_a.pk}, format="json", **headers)
    Report.objects.update(status="failed")
    again = api.post(REPORTS, {"site": site_a.pk}, format="json", **headers)
    assert again["Idempotency-Replayed"] == "true" and again.json() == first.json() and Report.objects.count() == 1
    assert api.post(REPORTS, {}, format="json", **headers).status_code == 422


def test_a_read_only_key_reads_but_cannot_ask(api_ro, org_a, site_a):
    report = make_report(org_a, site_a)
    response = api_ro.post(REPORTS, {"site": site_a.pk}, format="json")
    assert response.status_code == 403 and error_of(response)["code"] == "read_only_key"
    assert Report.objects.count() == 1
    assert ids(api_ro.get(REPORTS)) == [report.pk] and api_ro.get(detail(report)).status_code == 200


# --- lists ---------------------------------------------------------------------------------------

def test_the_list_is_the_organizations_newest_first_and_filtered(api, org_a, org_b, site_a, site_b):
    portfolio = make_report(org_a, status="done")
    site_report = make_report(org_a, site_a, status="failed", error="Chromium crashed")
    make_report(org_b, site_b)
    assert ids(api.get(REPORTS)) == [site_report.pk, portfolio.pk]
    assert ids(api.get(REPORTS, {"status": "done"})) == [portfolio.pk]
    assert ids(api.get(REPORTS, {"kind": "site"})) == [site_report.pk]
    assert ids(api.get(REPORTS, {"site": site_a.pk})) == [site_report.pk]
    assert ids(api.get(REPORTS, {"site": site_b.pk})) == []


@pytest.mark.parametrize("params, field", [({"status": "printed"}, "status"), ({"kind": "pdf"}, "kind"),
                                           ({"site": "x"}, "site"), ({"fields": "id,file"}, "fields")])
def test_bad_list_parameters_answer_400(api, params, field):
    response = api.get(REPORTS, params)
    assert response.status_code == 400 and field in error_of(response)["fields"]


def test_the_list_exports_as_csv_and_keeps_only_the_named_fields(api, org_a, site_a):
    report = make_report(org_a, site_a)
    for response in (api.get(REPORTS, {"format": "csv"}), api.get(REPORTS, HTTP_ACCEPT="text/csv")):
        rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
        assert [(r["id"], r["kind"], r["site"]) for r in rows] == [(str(report.pk), "site", str(site_a.pk))]
    assert api.get(REPORTS, {"fields": "id,status"}).json()["results"] == [{"id": report.pk, "status": "queued"}]
    assert api.get(detail(report), {"fields": "kind"}).json() == {"kind": "site"}


def test_the_list_costs_the_same_queries_for_3_or_25_reports(api, org_a, site_a, django_assert_max_num_queries):
    for _ in range(3):
        make_report(org_a, site_a)
    few = queries_of(api, REPORTS)
    for index in range(22):
        make_report(org_a, site_a if index % 2 else None, status="failed")
    with django_assert_max_num_queries(few):
        assert len(api.get(REPORTS, {"page_size": 50}).json()["results"]) == 25


# --- the PDF --------------------------------------------------------------------------------------

@pytest.mark.parametrize("status, code", [("queued", "report_not_ready"), ("running", "report_not_ready"),
                                          ("failed", "report_failed")])
def test_the_pdf_answers_409_until_it_is_printed(api, org_a, site_a, status, code):
    report = make_report(org_a, site_a, status=status, error="Chromium crashed." if status == "failed" else "")
    for accept in ("application/pdf", "application/json", "*/*"):
        response = api.get(f"{detail(report)}pdf/", HTTP_ACCEPT=accept)
        assert response.status_code == 409 and response["Content-Type"] == "application/json", accept
        assert error_of(response)["code"] == code


def test_a_pdf_whose_file_is_gone_answers_404(api, org_a, site_a):
    report = make_report(org_a, site_a, status="running")
    report = services.store_pdf(report, b"%PDF-1.4\n%%EOF\n", 0.1)
    report.file.delete(save=False)
    response = api.get(f"{detail(report)}pdf/")
    assert response.status_code == 404 and "gone" in error_of(response)["message"]


def test_agency_b_gets_404_for_agency_a_reports(api_b, org_a, site_a):
    report = make_report(org_a, site_a, status="failed")
    for url in (detail(report), f"{detail(report)}pdf/"):
        response = api_b.get(url)
        assert response.status_code == 404 and error_of(response)["code"] == "not_found", url
    assert ids(api_b.get(REPORTS)) == []


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_report_asked_for_over_the_api_is_printed_and_downloaded(api, site_a, start_worker_on,
                                                                   no_chromium_left):  # noqa: F811
    audit = done_audit(site_a, protocols=("TLSv1.0", "TLSv1.2", "TLSv1.3"))
    response = api.post(REPORTS, {"site": site_a.pk}, format="json")
    assert response.status_code == 202
    start_worker_on(("browser",))
    report = wait_until_finished(Report.objects.get(pk=response.json()["id"]))
    assert report.status == "done", report.error
    body = api.get(response["Location"]).json()
    assert body["download_url"] == f"{detail(report)}pdf/" and body["pages"] >= 2 and body["size"] == report.size
    download = api.get(body["download_url"], HTTP_ACCEPT="application/pdf")
    assert download.status_code == 200 and download["Content-Type"] == "application/pdf"
    assert f'filename="{body["filename"]}"' in download["Content-Disposition"]
    pdf = b"".join(download.streaming_content)
    assert pdf.startswith(b"%PDF-") and len(pdf) == report.size
    assert "shop.example.com" in pdf_text(pdf) and f"Grade {audit.grade}" in pdf_text(pdf)
