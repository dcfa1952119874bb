from datetime import timedelta

from django.db.models import OuterRef, Q, Subquery
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from tlsaudit.api.base import CsvListMixin, OrgView
from tlsaudit.api.errors import BadQuery, Conflict, body_of
from tlsaudit.api.logging import log
from tlsaudit.api.pagination import ByName
from tlsaudit.api.serializers.common import (
    ALL_GRADES,
    BulkResultSerializer,
    BulkSitesSerializer,
    SiteSerializer,
    SiteWriteSerializer,
)
from tlsaudit.api.views.common import FIELDS_PARAM, PAGE_SIZE_PARAM
from tlsaudit.audits.models import AuditCertificate, RenewalInfo
from tlsaudit.audits.renewals import site_history
from tlsaudit.domain.diff import grades_at_or_below
from tlsaudit.domain.services import SERVICES
from tlsaudit.sites.models import Site, tagged

MAX_EXPIRY_DAYS = 3650
SITE_FILTERS = [
    OpenApiParameter("tag", str, description="Only sites with this tag."),
    OpenApiParameter("grade", str, enum=list(ALL_GRADES),
                     description="Only sites whose latest grade is exactly this (`B` gives B only)."),
    OpenApiParameter("grade_max", str, enum=list(ALL_GRADES),
                     description="Only sites graded this or worse (`B` gives B, C, D, E, F, T and M; "
                                 "ungraded sites are left out)."),
    OpenApiParameter("expiring_within_days", {"type": "integer", "minimum": 0, "maximum": MAX_EXPIRY_DAYS},
                     description=f"Only sites whose leaf certificate expires within this many days (0–{MAX_EXPIRY_DAYS})."),
    OpenApiParameter("search", str, description="Substring of the host name or display name."),
    OpenApiParameter("service", str, enum=list(SERVICES),
                     description="Only sites of this TLS service (`smtp` gives SMTP with STARTTLS, not SMTPS)."),
    PAGE_SIZE_PARAM,
    FIELDS_PARAM,
]


def leaf_expiry():
    leaf = AuditCertificate.objects.filter(audit=OuterRef("last_audit_id"), deployment=0, position=0)
    return Subquery(leaf.values("not_after")[:1])


def leaf_renewal_info():
    """The ARI row of the latest audit's leaf (tlsaudit/audits/renewals.py)."""
    leaf = AuditCertificate.objects.filter(audit=OuterRef(OuterRef("last_audit_id")), deployment=0, position=0)
    return RenewalInfo.objects.filter(site=OuterRef("pk"), fingerprint=Subquery(leaf.values("fingerprint_sha256")[:1]))


def sites_of(org):
    info = leaf_renewal_info()
    return (Site.objects.filter(organization=org).prefetch_related("tags")
            .annotate(certificate_not_after=leaf_expiry(),
                      renewal_window_start=Subquery(info.values("window_start")[:1]),
                      renewal_window_end=Subquery(info.values("window_end")[:1]),
                      renewal_window_moved_from=Subquery(info.values("earlier_from_end")[:1])))


def filter_sites(queryset, params, org):
    tag = params.get("tag", "").strip().lower()
    if tag:
        queryset = tagged(queryset, org.pk, tag)
    grade = params.get("grade")
    if grade is not None:
        queryset = queryset.filter(last_grade=known_grade("grade", grade))
    best = params.get("grade_max")
    if best is not None:
        queryset = queryset.filter(last_grade__in=grades_at_or_below(known_grade("grade_max", best)))
    search = params.get("search", "").strip()
    if search:
        queryset = queryset.filter(Q(hostname__icontains=search) | Q(name__icontains=search))
    service = params.get("service")
    if service is not None:
        queryset = queryset.filter(service=known_service(service))
    days = params.get("expiring_within_days")
    if days is not None:
        queryset = queryset.filter(certificate_not_after__lte=timezone.now() + timedelta(days=parse_days(days)))
    return queryset


def known_grade(param: str, grade: str) -> str:
    if grade not in ALL_GRADES:
        raise BadQuery({param: f"Use one of {', '.join(ALL_GRADES)}."})
    return grade


def known_service(service: str) -> str:
    if service not in SERVICES:
        raise BadQuery({"service": f"Use one of {', '.join(SERVICES)}."})
    return service


def parse_days(raw: str) -> int:
    if not raw.isdigit() or int(raw) > MAX_EXPIRY_DAYS:
        raise BadQuery({"expiring_within_days": f"Use a whole number of days from 0 to {MAX_EXPIRY_DAYS}."})
    return int(raw)


class SiteList(CsvListMixin, mixins.ListModelMixin, OrgView):
    serializer_class = SiteSerializer
    pagination_class = ByName
    csv_name = "sites"

    def get_queryset(self):
        return filter_sites(sites_of(self.org), self.request.query_params, self.org)

    @extend_schema(parameters=SITE_FILTERS, summary="List sites")
    def get(self, request):
        return self.list(request)

    @extend_schema(request=SiteWriteSerializer, responses={201: SiteSerializer}, summary="Add a site")
    def post(self, request):
        writer = SiteWriteSerializer(data=request.data, context={"org": self.org})
        writer.is_valid(raise_exception=True)
        site = writer.save(created_by=actor(request))
        body = SiteSerializer(sites_of(self.org).get(pk=site.pk), context={"request": request, "all_fields": True})
        return Response(body.data, status=status.HTTP_201_CREATED, headers={"Location": body.data["url"]})


class SiteDetail(OrgView):
    serializer_class = SiteSerializer

    def get_queryset(self):
        return sites_of(self.org)

    @extend_schema(parameters=[FIELDS_PARAM], summary="A site")
    def get(self, request, pk):
        return Response(self.get_serializer(self.get_object()).data)

    @extend_schema(request=SiteWriteSerializer, responses={200: SiteSerializer}, summary="Change a site")
    def patch(self, request, pk):
        site = self.get_object()
        writer = SiteWriteSerializer(site, data=request.data, partial=True, context={"org": self.org})
        writer.is_valid(raise_exception=True)
        writer.save()
        return Response(SiteSerializer(self.get_queryset().get(pk=pk),
                                       context={"request": request, "all_fields": True}).data)

    @extend_schema(request=SiteWriteSerializer, responses={200: SiteSerializer}, summary="Replace a site")
    def put(self, request, pk):
        site = self.get_object()
        writer = SiteWriteSerializer(site, data=request.data, context={"org": self.org})
        writer.is_valid(raise_exception=True)
        writer.save()
        return Response(SiteSerializer(self.get_queryset().get(pk=pk),
                                       context={"request": request, "all_fields": True}).data)

    @extend_schema(responses={204: None}, summary="Delete a site and its history")
    def delete(self, request, pk):
        site = self.get_object()
        record_deletion(request, self.org, site)
        site.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class SiteBulkCreate(OrgView):
    serializer_class = BulkSitesSerializer

    @extend_schema(request=BulkSitesSerializer, responses={200: BulkResultSerializer},
                   summary="Add many sites; each item succeeds or fails on its own")
    def post(self, request):
        batch = BulkSitesSerializer(data=request.data)
        batch.is_valid(raise_exception=True)
        results = [self.create_one(index, item) for index, item in enumerate(batch.validated_data["sites"])]
        created = sum(1 for item in results if item["created"])
        return Response({"created": created, "failed": len(results) - created, "results": results})

    def create_one(self, index: int, item: dict) -> dict:
        # One DNS lookup per item would make a 1,000-site import take minutes; the audit re-checks.
        writer = SiteWriteSerializer(data=item, context={"org": self.org, "check_dns": False})
        try:
            writer.is_valid(raise_exception=True)
        except (ValidationError, Conflict) as exc:
            return {"index": index, "created": False, "site": None, "error": body_of(exc)}
        site = writer.save(created_by=actor(self.request))
        data = SiteSerializer(sites_of(self.org).get(pk=site.pk),
                              context={"request": self.request, "all_fields": True}).data
        return {"index": index, "created": True, "site": data, "error": None}


def actor(request):
    return request.user if getattr(request.user, "pk", None) else None


def record_deletion(request, org, site) -> None:
    log(request, "site.deleted", org=org, target=site.origin, site_id=site.pk)


RENEWAL_CHANGE_FIELDS = {
    "fingerprint": serializers.CharField(help_text="SHA-256 of the leaf, hex."),
    "issuer_org": serializers.CharField(),
    "not_before": serializers.DateTimeField(),
    "not_after": serializers.DateTimeField(),
    "lifetime_days": serializers.FloatField(),
    "first_seen": serializers.DateTimeField(help_text="The first finished audit that saw it served."),
    "replaced_at": serializers.DateTimeField(allow_null=True, help_text="The first audit that saw its successor."),
    "margin_days": serializers.FloatField(allow_null=True, help_text="Days left on it when it was replaced."),
}
RenewalHistorySerializer = inline_serializer("RenewalHistory", {
    "automated": serializers.BooleanField(help_text="Whether the evidence says a client renews it on its own."),
    "evidence": serializers.ListField(child=serializers.CharField()),
    "flags": serializers.ListField(child=serializers.CharField(),
                                   help_text="A shrinking renewal margin; the lifetime caps a certificate renewed by "
                                             "hand will meet, with their dates."),
    "renewal_due": serializers.DateTimeField(allow_null=True, help_text="When the served leaf is overdue for renewal: "
                                             "its CA's ARI window end, else the organization's share of its life "
                                             "plus a day's grace."),
    "changes": inline_serializer("RenewalChange", RENEWAL_CHANGE_FIELDS, many=True),
})


class SiteRenewals(OrgView):
    def get_queryset(self):
        return Site.objects.filter(organization=self.org)

    @extend_schema(summary="A site's certificate renewals: history, automation evidence, flags",
                   responses={200: RenewalHistorySerializer})
    def get(self, request, pk):
        site = self.get_object()
        found = site_history(site)
        changes = [{"fingerprint": c.fingerprint, "issuer_org": c.issuer_org, "not_before": c.not_before,
                    "not_after": c.not_after, "lifetime_days": c.lifetime_days, "first_seen": c.first_seen,
                    "replaced_at": c.replaced_at, "margin_days": c.margin_days} for c in found.changes]
        body = {"automated": found.automated, "evidence": found.evidence, "flags": found.flags,
                "renewal_due": site.cert_renew_at, "changes": changes}
        return Response(body)
