"""Audits: the organization's history, a site's audits, starting one, one audit, two compared."""

from dataclasses import asdict

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import mixins, serializers
from rest_framework.response import Response

from tlsaudit.api.base import CsvListMixin, OrgView, requested_fields
from tlsaudit.api.errors import BadQuery, Conflict
from tlsaudit.api.idempotency import idempotent
from tlsaudit.api.models import ApiKey
from tlsaudit.api.serializers.audits import (
    FULL_FIELDS,
    HEAVY_COLUMNS,
    RAW_FIELDS,
    AuditDiffSerializer,
    AuditFullSerializer,
    AuditFullWithRawSerializer,
    AuditSerializer,
    AuditTriggerSerializer,
    AuditWithRawSerializer,
)
from tlsaudit.api.serializers.common import ALL_GRADES, ErrorSerializer
from tlsaudit.api.views.common import (
    EXISTING_HEADER,
    FIELDS_PARAM,
    ID_SCHEMA,
    IDEMPOTENCY_PARAM,
    NOT_QUEUED,
    PAGE_SIZE_PARAM,
    UnverifiedEmail,
    accepted,
    acting_user,
    choice,
    created_between,
    over_quota,
    since_until_params,
    site_in,
    whole_number,
)
from tlsaudit.audits import services, waiting
from tlsaudit.audits.models import Audit
from tlsaudit.monitoring.history import diff_between
from tlsaudit.sites.models import Site

RUN_ACTION = "run_audits"   # as the dashboard's "Audit now"
MAX_BULK_AUDITS = 10_000
VIEWS = ("compact", "full")
INCLUDES = ("raw",)
AUDIT_FILTERS = [
    OpenApiParameter("status", str, enum=list(Audit.Status.values), description="Only audits in this state."),
    OpenApiParameter("grade", str, enum=list(ALL_GRADES), description="Only audits that earned this grade."),
    *since_until_params("audits"),
    PAGE_SIZE_PARAM,
    FIELDS_PARAM,
]
DETAIL_PARAMS = [
    OpenApiParameter("view", str, enum=list(VIEWS),
                     description="compact (default): status, progress, grade, score, timings, error. full: also "
                                 "scores, caps, warnings, findings, protocols, suites, certificates, Mozilla "
                                 "verdicts and recommendations."),
    OpenApiParameter("include", str, enum=list(INCLUDES), description="raw: add sslyze's own JSON (large)."),
    FIELDS_PARAM,
]


def audits_of(org):
    """The organization's audits; the cursor orders them by `-id`, read from audit_org_newest_id (the
    EXPLAIN test in tests/perf/test_audit_list_plan.py holds the first page to a page of rows)."""
    return Audit.objects.filter(organization_id=org.pk)


def filter_audits(queryset, params):
    status = choice(params, "status", Audit.Status.values)
    if status:
        queryset = queryset.filter(status=status)
    grade = choice(params, "grade", ALL_GRADES)
    if grade:
        queryset = queryset.filter(grade=grade)
    return created_between(queryset, params)


class AuditList(CsvListMixin, mixins.ListModelMixin, OrgView):
    serializer_class = AuditSerializer
    csv_name = "audits"

    def get_queryset(self):
        audits = filter_audits(audits_of(self.org).defer(*HEAVY_COLUMNS), self.request.query_params)
        site = whole_number(self.request.query_params, "site")
        return audits.filter(site_id=site) if site is not None else audits

    @extend_schema(summary="List the organization's audits, newest first",
                   parameters=[OpenApiParameter("site", ID_SCHEMA, description="Only audits of this site (its id)."),
                               *AUDIT_FILTERS])
    def get(self, request):
        return self.list(request)


class SiteAuditList(CsvListMixin, mixins.ListModelMixin, OrgView):
    serializer_class = AuditSerializer
    csv_name = "audits"
    write_action = RUN_ACTION

    def get_queryset(self):
        site = site_in(self.org, self.kwargs["pk"])
        return filter_audits(site.audits.defer(*HEAVY_COLUMNS), self.request.query_params)

    @extend_schema(summary="List a site's audits, newest first", parameters=AUDIT_FILTERS)
    def get(self, request, pk):
        return self.list(request)

    @extend_schema(
        summary="Start an audit of the site",
        description="Answers 202 with the queued audit and its URL in `Location`; poll it until `status` is done "
                    "or failed. If the site already has a queued or running audit, that audit is returned (still "
                    f"202) with the header `{EXISTING_HEADER}: true` and nothing new starts. Audits are limited per "
                    "organization per hour and per target: over a limit the answer is 429 with `Retry-After`.",
        request=AuditTriggerSerializer, parameters=[IDEMPOTENCY_PARAM],
        responses={202: OpenApiResponse(AuditSerializer, description="The new (or already active) audit."),
                   (503, "application/json"): NOT_QUEUED})
    @idempotent
    def post(self, request, pk):
        site = site_in(self.org, pk)
        user = acting_user(request)
        ensure_may_audit(request, user)
        try:
            audit, created = services.queue_audit(site, user=user, trigger=Audit.Trigger.API)
        except services.AuditRateLimited as limited:
            raise over_quota(limited.code, limited.message, limited.retry_after) from None
        body = AuditSerializer(audit, context={"request": request, "all_fields": True}).data
        return accepted(body, body["url"], existing=not created)


class AuditLimitsSerializer(serializers.Serializer):
    per_hour = serializers.IntegerField(help_text="Manual and API audits the organization may start in any hour "
                                                  "(nightly audits do not count).")
    left_this_hour = serializers.IntegerField()
    waiting = serializers.IntegerField(help_text="Audits in line for a free slot (asked for past the limit).")
    next_free_at = serializers.DateTimeField(allow_null=True, help_text="When the next slot frees up, if none is "
                                                                        "left now.")
    explained = serializers.CharField()


def audit_limits_body(organization_id: int) -> dict:
    budget = waiting.budget(organization_id)
    return {"per_hour": budget.per_hour, "left_this_hour": budget.left, "waiting": budget.waiting,
            "next_free_at": budget.next_free_at, "explained": budget.explained()}


class BulkAuditRequestSerializer(serializers.Serializer):
    sites = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False, min_length=1,
                                  max_length=MAX_BULK_AUDITS, help_text="Ids of the sites to audit.")
    all = serializers.BooleanField(required=False, default=False, help_text="Audit every site of the organization "
                                                                             "(instead of `sites`).")

    def validate(self, data):
        if bool(data.get("sites")) == data["all"]:
            raise serializers.ValidationError("Give either `sites` (a list of ids) or `all: true`.")
        return data


BulkAuditResultSerializer = inline_serializer("BulkAuditResult", {
    "queued": serializers.IntegerField(help_text="New audits queued now."),
    "already": serializers.IntegerField(help_text="Sites with an audit already queued, running or waiting."),
    "waiting": serializers.IntegerField(help_text="Past the hourly limit: in line for a free slot; each starts "
                                                  "as the hour frees up, or with the site's nightly audit."),
    "unsent": serializers.IntegerField(help_text="Saved, sent when the task queue is back."),
    "refused": serializers.IntegerField(help_text="Refused by a target's own limit (see `reasons`)."),
    "reasons": serializers.ListField(child=serializers.CharField()),
    "audit_limits": AuditLimitsSerializer(),
})


class AuditBulk(OrgView):
    write_action = RUN_ACTION
    serializer_class = BulkAuditRequestSerializer

    @extend_schema(
        summary="Audit many sites; past the hourly limit they wait in line",
        description="Starts an audit of each site as `POST /sites/{id}/audits/` would, under the same limits. Past "
                    "the organization's hourly limit (`audit_limits.per_hour`) the rest are not refused: they wait "
                    "in line and start as the hour frees up, or with the site's nightly audit if that comes "
                    "first. Ids of other organizations' sites are ignored. `GET /organization/` shows the limits "
                    "beforehand. `Location` lists the organization's queued audits.",
        request=BulkAuditRequestSerializer, parameters=[IDEMPOTENCY_PARAM],
        responses={202: BulkAuditResultSerializer})
    @idempotent
    def post(self, request):
        ask = BulkAuditRequestSerializer(data=request.data)
        ask.is_valid(raise_exception=True)
        user = acting_user(request)
        ensure_may_audit(request, user)
        sites = Site.objects.filter(organization=self.org).order_by("hostname", "https_port", "pk")
        if not ask.validated_data["all"]:
            sites = sites.filter(pk__in=ask.validated_data["sites"])
        outcome = services.queue_audits(sites, user=user, trigger=Audit.Trigger.API)
        # Location: where the queued audits can be followed.
        return accepted({**asdict(outcome), "audit_limits": audit_limits_body(self.org.pk)},
                        request.build_absolute_uri(reverse("api:audit-list") + "?status=queued"))


def ensure_may_audit(request, user) -> None:
    """The dashboard's rule: a signed-in person needs a verified email (audits send traffic to the
    site, so we need to know who asks). A key's creator is held to the same rule."""
    if user is not None and not user.email_verified:
        who = f"This key's creator ({user.email}) has" if isinstance(request.auth, ApiKey) else "You have"
        raise UnverifiedEmail(f"{who} not verified their email address yet: audits send traffic to the site, so we "
                              "need to know who asks.")


class AuditDetail(OrgView):
    serializer_class = AuditSerializer

    def get_queryset(self):
        return audits_of(self.org)

    def get_serializer_class(self):
        """?view= and ?include= choose the default shape; ?fields= may name any field of any shape (naming
        `findings` brings what ?view=full reads), so the fields the schema lists are all accepted."""
        params = self.request.query_params
        wanted = set(requested_fields(self.request))
        full = (choice(params, "view", VIEWS) or "compact") == "full" or bool(wanted & set(FULL_FIELDS))
        raw = choice(params, "include", INCLUDES) == "raw" or bool(wanted & set(RAW_FIELDS))
        return {(False, False): AuditSerializer, (True, False): AuditFullSerializer,
                (False, True): AuditWithRawSerializer, (True, True): AuditFullWithRawSerializer}[(full, raw)]

    @extend_schema(summary="An audit: status and grade; the whole report with ?view=full",
                   parameters=DETAIL_PARAMS, responses={200: AuditFullWithRawSerializer})
    def get(self, request, pk):
        serializer_class = self.get_serializer_class()
        audit = get_object_or_404(self.get_queryset().defer(*UNREAD_COLUMNS[serializer_class]), pk=pk)
        return Response(serializer_class(audit, context=self.get_serializer_context()).data)


# The JSON columns each shape does not read, left in the database.
UNREAD_COLUMNS = {
    AuditSerializer: HEAVY_COLUMNS,
    AuditWithRawSerializer: ("facts", "report"),
    AuditFullSerializer: ("raw", "mozilla_raw"),
    AuditFullWithRawSerializer: (),
}


class AuditDiff(OrgView):
    serializer_class = AuditDiffSerializer

    @extend_schema(summary="What changed between two audits",
                   description="Both audits must belong to your organization (else 404) and be done (else 409). "
                               "They may be of different sites; the earlier one (by finish time) is `old`.",
                   parameters=[OpenApiParameter("against", ID_SCHEMA, required=True,
                                                description="The id of the audit to compare with.")],
                   responses={200: AuditDiffSerializer,
                              409: OpenApiResponse(ErrorSerializer, description="An audit is not done.")})
    def get(self, request, pk):
        columns = ("id", "site_id", "status", "grade", "created_at", "finished_at", "facts", "report")
        audit = get_object_or_404(audits_of(self.org).only(*columns), pk=pk)
        against = whole_number(request.query_params, "against")
        if against is None:
            raise BadQuery({"against": "Give the id of the audit to compare with: ?against=<id>."})
        if against == audit.pk:
            raise BadQuery({"against": "Compare with another audit, not with itself."})
        other = get_object_or_404(audits_of(self.org).only(*columns), pk=against)
        for each in (audit, other):
            if each.status != Audit.Status.DONE:
                raise Conflict(f"Audit {each.pk} is {each.status}: only finished audits can be compared.",
                               code="audit_not_done")
        # A done audit may lack its finish time (an imported or early row): its creation time stands in.
        old, new = sorted((audit, other), key=lambda a: (a.finished_at or a.created_at, a.pk))
        return Response(AuditDiffSerializer(diff_body(old, new)).data)


def diff_body(old: Audit, new: Audit) -> dict:
    diff = diff_between(old, new)
    certificate = None
    if diff.certificate is not None:
        before, after = diff.certificate
        certificate = {"old": asdict(before) if before else None, "new": asdict(after) if after else None}
    return {
        "old": reference(old), "new": reference(new), "changed": diff.changed,
        "protocols_added": diff.protocols_added, "protocols_removed": diff.protocols_removed,
        "suites_added": [{"protocol": p, "name": n} for p, n in diff.suites_added],
        "suites_removed": [{"protocol": p, "name": n} for p, n in diff.suites_removed],
        "certificate": certificate,
        "findings_appeared": [asdict(f) for f in diff.findings_appeared],
        "findings_fixed": [asdict(f) for f in diff.findings_fixed],
        "grade": {**asdict(diff.grade), "direction": diff.grade.direction},
    }


def reference(audit: Audit) -> dict:
    return {"id": audit.pk, "url": reverse("api:audit-detail", args=[audit.pk]), "site": audit.site_id,
            "grade": audit.grade, "finished_at": audit.finished_at}
