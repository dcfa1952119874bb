from datetime import timedelta

from django.db.models import Count
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from tlsaudit.api.base import OrgView
from tlsaudit.api.errors import BadQuery
from tlsaudit.api.models import ApiKey
from tlsaudit.api.serializers import ALL_GRADES, SiteSerializer
from tlsaudit.api.views.sites import sites_of
from tlsaudit.orgs.models import Membership

PORTFOLIO_LIST_LIMIT = 100


class MemberSerializer(serializers.Serializer):
    email = serializers.EmailField(source="user.email")
    role = serializers.CharField()
    joined_at = serializers.DateTimeField(source="created_at")


class OrganizationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    slug = serializers.CharField()
    created_at = serializers.DateTimeField()
    role = serializers.CharField(help_text="The role this request acts with (a read-write key acts as admin, "
                                           "a read-only key as viewer).")
    key_scope = serializers.CharField(allow_null=True, help_text="rw or ro for a key; null for a session.")
    members = MemberSerializer(many=True)


class OrganizationView(OrgView):
    serializer_class = OrganizationSerializer

    @extend_schema(summary="Your organization and its members (read-only)")
    def get(self, request):
        org = self.org
        members = Membership.objects.filter(organization=org).select_related("user").order_by("user__email")
        body = {"id": org.pk, "name": org.name, "slug": org.slug, "created_at": org.created_at, "role": org.role,
                "key_scope": request.auth.scope if isinstance(request.auth, ApiKey) else None,
                "members": members}
        return Response(OrganizationSerializer(body).data)


PortfolioSerializer = inline_serializer("Portfolio", {
    "sites": serializers.IntegerField(),
    "audited": serializers.IntegerField(),
    "never_audited": serializers.IntegerField(),
    "by_grade": serializers.DictField(child=serializers.IntegerField()),
    "failing": serializers.IntegerField(help_text="Sites whose latest audit failed (unreachable, refused…)."),
    "failing_sites": SiteSerializer(many=True),
    "expiring_within_days": serializers.IntegerField(),
    "expiring": serializers.IntegerField(),
    "expiring_sites": SiteSerializer(many=True),
})


class PortfolioView(OrgView):
    serializer_class = SiteSerializer

    @extend_schema(summary="Organization summary: grades, expiring certificates, failing sites",
                   parameters=[OpenApiParameter("days", int, description="Expiry horizon in days (default 30).")],
                   responses={200: PortfolioSerializer})
    def get(self, request):
        days = parse_horizon(request.query_params.get("days", "30"))
        sites = sites_of(self.org)
        by_grade = dict(sites.order_by().exclude(last_grade="").values_list("last_grade")
                        .annotate(n=Count("id")).values_list("last_grade", "n"))
        failing = sites.filter(last_audit_status="failed").order_by("hostname", "https_port")
        expiring = (sites.filter(certificate_not_after__lte=timezone.now() + timedelta(days=days))
                    .order_by("certificate_not_after", "id"))
        total = sites.count()
        never = sites.filter(last_audit_at__isnull=True).count()
        context = {"request": request, "all_fields": True}
        return Response({
            "sites": total, "audited": total - never, "never_audited": never,
            "by_grade": {grade: by_grade.get(grade, 0) for grade in ALL_GRADES},
            "failing": failing.count(),
            "failing_sites": SiteSerializer(failing[:PORTFOLIO_LIST_LIMIT], many=True, context=context).data,
            "expiring_within_days": days, "expiring": expiring.count(),
            "expiring_sites": SiteSerializer(expiring[:PORTFOLIO_LIST_LIMIT], many=True, context=context).data,
        })


def parse_horizon(raw: str) -> int:
    if not raw.isdigit() or not 0 <= int(raw) <= 3650:
        raise BadQuery({"days": "Use a whole number of days from 0 to 3650."})
    return int(raw)
