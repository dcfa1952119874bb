"""Browser probes of a site: list, start, one probe with its medians, tables and charts."""

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, serializers
from rest_framework.response import Response

from tlsaudit.api.base import CsvListMixin, OrgView, requested_fields
from tlsaudit.api.errors import Conflict, NotApplicable
from tlsaudit.api.idempotency import idempotent
from tlsaudit.api.models import ApiKey
from tlsaudit.api.serializers.probes import (
    HEAVY_COLUMNS,
    ProbeDetailSerializer,
    ProbeRequestSerializer,
    ProbeSerializer,
    ProbeWithRawSerializer,
)
from tlsaudit.api.views.common import (
    FIELDS_PARAM,
    IDEMPOTENCY_PARAM,
    NOT_QUEUED,
    PAGE_SIZE_PARAM,
    Refused,
    accepted,
    acting_user,
    choice,
    daily_cap_refusal,
    over_quota,
    site_in,
)
from tlsaudit.probes import services
from tlsaudit.probes.models import Probe
from tlsaudit.probes.views import RUN_ACTION

KEY_WITHOUT_PERSON = ("Browser probes need a person with a verified email address: this key's creator is no "
                      "longer a member of the organization. Create a new key to run probes.")


class SiteProbeList(CsvListMixin, mixins.ListModelMixin, OrgView):
    serializer_class = ProbeSerializer
    csv_name = "probes"
    write_action = RUN_ACTION

    def get_queryset(self):
        site = site_in(self.org, self.kwargs["pk"])
        probes = site.probes.defer(*HEAVY_COLUMNS)
        status = choice(self.request.query_params, "status", Probe.Status.values)
        return probes.filter(status=status) if status else probes

    @extend_schema(summary="List a site's browser probes, newest first",
                   parameters=[OpenApiParameter("status", str, enum=list(Probe.Status.values)), PAGE_SIZE_PARAM,
                               FIELDS_PARAM])
    def get(self, request, pk):
        return self.list(request)

    @extend_schema(
        summary="Start a browser probe of the site",
        description="Loads the page in Chromium over HTTPS and HTTP, cold and warm, round after round for `seconds` "
                    "(at least 3 rounds, at most `runs`). A probe "
                    "acts for a person with a verified email: the signed-in user, or for a key the member who "
                    "created it. Answers 202 with the queued probe and its URL in `Location`. Refusals: 400 "
                    "`not_applicable` (a site that is not HTTPS: an SMTP server has no page to load); 403 "
                    "`unverified_email`; 409 `busy` (one probe per site at a time); 429 `probes_per_org`, "
                    "`probes_per_target` or `cap_probes_per_day` with `Retry-After`.",
        request=ProbeRequestSerializer, parameters=[IDEMPOTENCY_PARAM],
        responses={202: OpenApiResponse(ProbeSerializer, description="The queued probe."),
                   (503, "application/json"): NOT_QUEUED})
    @idempotent
    def post(self, request, pk):
        site = site_in(self.org, pk)
        body = ProbeRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            probe = services.queue_probe(site, dict(body.validated_data), user=acting_user(request))
        except services.ProbeRefused as refusal:
            raise api_error(request, refusal, self.org) from None
        data = ProbeSerializer(probe, context={"request": request, "all_fields": True}).data
        return accepted(data, data["url"])


def api_error(request, refusal: services.ProbeRefused, org) -> Exception:
    if isinstance(refusal, services.ProbeRateLimited):
        return over_quota(refusal.code, refusal.message, refusal.retry_after)
    if refusal.code == "cap_probes_per_day":
        return daily_cap_refusal(Probe.objects.filter(organization=org), settings.PROBE_RUNS_PER_DAY, refusal.code,
                                 refusal.message)
    if refusal.code == "unverified_email":
        if isinstance(request.auth, ApiKey) and acting_user(request) is None:
            return Refused(KEY_WITHOUT_PERSON, refusal.code)
        return Refused(refusal.message, refusal.code)
    if refusal.code == "not_applicable":
        return NotApplicable(refusal.message)
    if refusal.code == "invalid_params":
        return serializers.ValidationError({"__all__": [refusal.message]})
    return Conflict(refusal.message, code=refusal.code)   # busy


class ProbeDetail(OrgView):
    serializer_class = ProbeDetailSerializer

    def get_serializer_class(self):
        # ?fields=raw asks for it as ?include=raw does: every field the schema lists is accepted.
        raw = choice(self.request.query_params, "include", ("raw",)) == "raw" or "raw" in requested_fields(self.request)
        return ProbeWithRawSerializer if raw else ProbeDetailSerializer

    @extend_schema(summary="A browser probe: progress, then medians, tables and charts",
                   parameters=[OpenApiParameter("include", str, enum=["raw"],
                                                description="raw: add the engine's JSON (every load)."),
                               FIELDS_PARAM],
                   responses={200: ProbeWithRawSerializer})
    def get(self, request, pk):
        probe = get_object_or_404(Probe.objects.filter(organization=self.org), pk=pk)
        return Response(self.get_serializer(probe).data)
