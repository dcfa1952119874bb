from csp.decorators import csp_update
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny

from tlsaudit.api import schema  # noqa: F401  registers the OpenAPI extensions before any schema is built
from tlsaudit.api.base import csv_export
from tlsaudit.api.views import audits, digests, organization, perf, probes, reports, sites, webhooks

app_name = "api"

# The schema and its docs are public: reading them before you have a key is the point.
PUBLIC = {"permission_classes": [AllowAny], "authentication_classes": []}
# Swagger UI (third-party, served from drf-spectacular-sidecar) carries inline <style> blocks;
# scripts stay 'self' only. No ReDoc: its page fetches Google Fonts and a CDN logo.
docs_policy = csp_update({"style-src": ["'self'", "'unsafe-inline'"]})

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(**PUBLIC), name="schema"),
    path("docs/", docs_policy(SpectacularSwaggerSplitView.as_view(url_name="api:schema", **PUBLIC)), name="docs"),
    path("organization/", organization.OrganizationView.as_view(), name="organization"),
    path("organization/custom-ca/", organization.CustomCaView.as_view(), name="custom-ca"),
    path("portfolio/", organization.PortfolioView.as_view(), name="portfolio"),
    path("sites/", sites.SiteList.as_view(), name="site-list"),
    path("sites/bulk/", sites.SiteBulkCreate.as_view(), name="site-bulk"),
    path("sites/<int:pk>/", sites.SiteDetail.as_view(), name="site-detail"),
    path("sites/<int:pk>/renewals/", sites.SiteRenewals.as_view(), name="site-renewals"),
    # Audits, load tests, handshakes, probes, reports, webhooks
    path("audits/", audits.AuditList.as_view(), name="audit-list"),
    path("audits/bulk/", audits.AuditBulk.as_view(), name="audit-bulk"),
    path("audits/<int:pk>/", audits.AuditDetail.as_view(), name="audit-detail"),
    path("audits/<int:pk>/diff/", audits.AuditDiff.as_view(), name="audit-diff"),
    path("sites/<int:pk>/audits/", audits.SiteAuditList.as_view(), name="site-audits"),
    path("sites/<int:pk>/loadtests/", perf.SiteLoadTestList.as_view(), name="site-loadtests"),
    path("sites/<int:pk>/handshakes/", perf.SiteHandshakeList.as_view(), name="site-handshakes"),
    path("loadtests/<int:pk>/", perf.RunDetail.as_view(), name="loadtest-detail"),
    path("loadtests/<int:pk>/stop/", perf.RunStop.as_view(), name="loadtest-stop"),
    path("sites/<int:pk>/probes/", probes.SiteProbeList.as_view(), name="site-probes"),
    path("probes/<int:pk>/", probes.ProbeDetail.as_view(), name="probe-detail"),
    path("reports/", reports.ReportList.as_view(), name="report-list"),
    path("reports/<int:pk>/", reports.ReportDetail.as_view(), name="report-detail"),
    path("reports/<int:pk>/pdf/", reports.ReportPdf.as_view(), name="report-pdf"),
    path("webhooks/", webhooks.WebhookList.as_view(), name="webhook-list"),
    path("webhooks/<int:pk>/", webhooks.WebhookDetail.as_view(), name="webhook-detail"),
    path("webhooks/<int:pk>/test/", webhooks.WebhookTest.as_view(), name="webhook-test"),
    path("webhooks/<int:pk>/deliveries/", webhooks.WebhookDeliveries.as_view(), name="webhook-deliveries"),
    path("webhooks/<int:pk>/deliveries/<int:delivery_pk>/redeliver/", webhooks.WebhookRedeliver.as_view(),
         name="webhook-redeliver"),
    path("digests/", digests.DigestView.as_view(), name="digests"),
    path("digests/send/", digests.DigestSendNow.as_view(), name="digest-send"),
    path("nightly/run-now/", digests.NightlyRunNow.as_view(), name="nightly-run-now"),
]

# Every list as a CSV file at a path of its own (see base.csv_export): route, list view, operationId, summary.
CSV_EXPORTS = [
    ("sites.csv", sites.SiteList, "sites_csv", "Sites as CSV"),
    ("audits.csv", audits.AuditList, "audits_csv", "The organization's audits as CSV"),
    ("sites/<int:pk>/audits.csv", audits.SiteAuditList, "sites_audits_csv", "A site's audits as CSV"),
    ("sites/<int:pk>/loadtests.csv", perf.SiteLoadTestList, "sites_loadtests_csv",
     "A site's load tests and sweeps as CSV"),
    ("sites/<int:pk>/handshakes.csv", perf.SiteHandshakeList, "sites_handshakes_csv", "A site's handshake runs as CSV"),
    ("sites/<int:pk>/probes.csv", probes.SiteProbeList, "sites_probes_csv", "A site's browser probes as CSV"),
    ("reports.csv", reports.ReportList, "reports_csv", "The organization's reports as CSV"),
    ("webhooks.csv", webhooks.WebhookList, "webhooks_csv", "The organization's webhooks as CSV"),
    ("webhooks/<int:pk>/deliveries.csv", webhooks.WebhookDeliveries, "webhooks_deliveries_csv",
     "A webhook's deliveries as CSV"),
]
urlpatterns += [path(route, csv_export(view, operation_id, summary, tag=route.split(".")[0].split("/")[0]).as_view(),
                     name=operation_id)
                for route, view, operation_id, summary in CSV_EXPORTS]
