"""Load tests, sweeps and handshake runs of a site: list, start (within the organization's caps),
one run with its results, stop."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, serializers
from rest_framework.response import Response

from tlsaudit.api.base import CsvListMixin, OrgView
from tlsaudit.api.errors import Conflict, NotApplicable
from tlsaudit.api.idempotency import idempotent
from tlsaudit.api.serializers.perf import (
    HEAVY_COLUMNS,
    HandshakeRunRequestSerializer,
    LoadRunRequestSerializer,
    PerfRunDetailSerializer,
    PerfRunSerializer,
    run_params,
)
from tlsaudit.api.views.common import (
    FIELDS_PARAM,
    IDEMPOTENCY_PARAM,
    NOT_QUEUED,
    PAGE_SIZE_PARAM,
    accepted,
    acting_user,
    choice,
    daily_cap_refusal,
    site_in,
)
from tlsaudit.loadtests import checks, services
from tlsaudit.loadtests.models import LoadLimits, PerfRun
from tlsaudit.loadtests.views import RUN_ACTION

LOAD_KINDS = (PerfRun.Kind.LOAD, PerfRun.Kind.SWEEP)
# The field each cap refusal is about, per kind of run.
CAP_FIELDS = {
    "cap_concurrency": {"load": "concurrency", "sweep": "levels", "handshakes": "agents_levels"},
    "cap_requests": {"load": "requests", "sweep": "requests", "handshakes": "per_agent"},
    "cap_duration": {"load": "seconds", "sweep": "seconds", "handshakes": "seconds"},
}
REFUSALS_DOC = ("Refusals: 400 `not_applicable` (a load test or sweep of a site that is not HTTPS, a handshake run "
                "of a STARTTLS service); 409 `unverified` (prove control of the site first, on its verification page; a proof "
                "covers the host name, ports and pinned IP it was made for) or `busy` (one run per site at a "
                "time); 422 `cap_concurrency` / `cap_requests` naming the field over the organization's cap, or "
                "`cap_duration` (under `seconds`) when the plan could outlast its maximum duration, saying how long "
                "it could take and what would fit; 429 "
                "`cap_runs_per_day` with `Retry-After` until a run of the last 24 hours ages out.")
STATUS_PARAM = OpenApiParameter("status", str, enum=list(PerfRun.Status.values), description="Only runs in this state.")


class OverCap(serializers.ValidationError):
    """422 naming the field over the organization's cap; its code is the service's (cap_concurrency, …)."""

    def __init__(self, field: str, refusal: checks.RunRefused):
        super().__init__({field: [refusal.message]})
        self.default_code = refusal.code


def queue(request, org, site, kind: str, params: dict) -> Response:
    """queue_run with its refusals as API errors, and 202 with the run."""
    try:
        run = services.queue_run(site, kind, params, user=acting_user(request))
    except checks.RunRefused as refusal:
        raise api_error(refusal, org, kind) from None
    body = PerfRunSerializer(run, context={"request": request, "all_fields": True}).data
    return accepted(body, body["url"])


def api_error(refusal: checks.RunRefused, org, kind: str) -> Exception:
    if refusal.code in CAP_FIELDS:
        return OverCap(CAP_FIELDS[refusal.code][kind], refusal)
    if refusal.code == "cap_runs_per_day":
        limit = LoadLimits.for_org(org).runs_per_day
        return daily_cap_refusal(PerfRun.objects.filter(organization=org), limit, refusal.code, refusal.message)
    if refusal.code == "not_applicable":
        return NotApplicable(refusal.message)
    if refusal.code == "invalid_params":
        return serializers.ValidationError({"__all__": [refusal.message]})
    return Conflict(refusal.message, code=refusal.code)   # unverified, busy


class SiteRunList(CsvListMixin, mixins.ListModelMixin, OrgView):
    serializer_class = PerfRunSerializer
    csv_name = "runs"
    write_action = RUN_ACTION
    kinds: tuple = ()

    def get_queryset(self):
        site = site_in(self.org, self.kwargs["pk"])
        runs = site.perf_runs.filter(kind__in=self.kinds).defer(*HEAVY_COLUMNS)
        status = choice(self.request.query_params, "status", PerfRun.Status.values)
        return runs.filter(status=status) if status else runs

    def queue_from_body(self, request, pk, request_serializer, kind: str | None = None):
        """Validate the body with `request_serializer`, then queue the run (its `kind` unless given)."""
        site = site_in(self.org, pk)
        body = request_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        return queue(request, self.org, site, kind or body.validated_data["kind"], run_params(body.validated_data))


class SiteLoadTestList(SiteRunList):
    kinds = LOAD_KINDS

    def get_queryset(self):
        runs = super().get_queryset()
        kind = choice(self.request.query_params, "kind", LOAD_KINDS)
        return runs.filter(kind=kind) if kind else runs

    @extend_schema(summary="List a site's load tests and sweeps, newest first",
                   parameters=[STATUS_PARAM, OpenApiParameter("kind", str, enum=list(LOAD_KINDS)),
                               PAGE_SIZE_PARAM, FIELDS_PARAM])
    def get(self, request, pk):
        return self.list(request)

    @extend_schema(summary="Start a load test or an HTTP vs HTTPS sweep",
                   description="The site must be verified (its owner proved control). Answers 202 with the queued "
                               "run and its URL in `Location`. " + REFUSALS_DOC,
                   request=LoadRunRequestSerializer, parameters=[IDEMPOTENCY_PARAM],
                   responses={202: OpenApiResponse(PerfRunSerializer, description="The queued run."),
                              (503, "application/json"): NOT_QUEUED})
    @idempotent
    def post(self, request, pk):
        return self.queue_from_body(request, pk, LoadRunRequestSerializer)


class SiteHandshakeList(SiteRunList):
    kinds = (PerfRun.Kind.HANDSHAKES,)

    @extend_schema(summary="List a site's handshake timing runs, newest first",
                   parameters=[STATUS_PARAM, PAGE_SIZE_PARAM, FIELDS_PARAM])
    def get(self, request, pk):
        return self.list(request)

    @extend_schema(summary="Start a handshake timing run (TLS 1.2 vs 1.3, full vs resumed)",
                   description="The site must be verified. Answers 202 with the queued run and its URL in "
                               "`Location`; read it at /loadtests/{id}/. " + REFUSALS_DOC,
                   request=HandshakeRunRequestSerializer, parameters=[IDEMPOTENCY_PARAM],
                   responses={202: OpenApiResponse(PerfRunSerializer, description="The queued run."),
                              (503, "application/json"): NOT_QUEUED})
    @idempotent
    def post(self, request, pk):
        return self.queue_from_body(request, pk, HandshakeRunRequestSerializer, PerfRun.Kind.HANDSHAKES)


class RunDetail(OrgView):
    serializer_class = PerfRunDetailSerializer

    def get_queryset(self):
        return PerfRun.objects.filter(organization=self.org)

    @extend_schema(summary="A load test, sweep or handshake run: progress, then results",
                   parameters=[FIELDS_PARAM])
    def get(self, request, pk):
        return Response(self.get_serializer(self.get_object()).data)


class RunStop(OrgView):
    serializer_class = PerfRunSerializer
    write_action = RUN_ACTION

    @extend_schema(summary="Stop a run",
                   description="A queued run is cancelled at once (200). A running one is asked to stop: its agents "
                               "stop within seconds, keeping the steps that finished (202; poll the run). A run that "
                               "already ended is returned as it is (200).",
                   request=None, responses={200: PerfRunSerializer, 202: PerfRunSerializer})
    def post(self, request, pk):
        run = get_object_or_404(PerfRun.objects.filter(organization=self.org), pk=pk)
        run = services.request_stop(run)
        body = PerfRunSerializer(run, context={"request": request, "all_fields": True}).data
        if run.is_finished:
            return Response(body)
        return accepted(body, body["url"])   # stopping: poll the run
