from datetime import timedelta

from django.db.models import Count
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response

from tlsaudit.api.base import OrgView
from tlsaudit.api.errors import BadQuery
from tlsaudit.api.logging import log
from tlsaudit.api.models import ApiKey
from tlsaudit.api.serializers.common import ALL_GRADES, SiteSerializer
from tlsaudit.api.views.audits import AuditLimitsSerializer, audit_limits_body
from tlsaudit.api.views.sites import sites_of
from tlsaudit.domain import customca
from tlsaudit.monitoring.portfolio import renewal_forecast
from tlsaudit.orgs.forms import OrganizationSettingsForm, ca_certificates
from tlsaudit.orgs.models import Membership
from tlsaudit.sites.models import Site

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
    audit_limits = AuditLimitsSerializer(help_text="The hourly limit on manual and API audits, what is left of it, "
                                                   "and how many audits wait in line for a free slot.")


class OrganizationView(OrgView):
    serializer_class = OrganizationSerializer

    @extend_schema(summary="Your organization and its members (read-only)")
    def get(self, request):
        org = self.org
        members = Membership.objects.filter(organization=org).select_related("user").order_by("user__email")
        body = {"id": org.pk, "name": org.name, "slug": org.slug, "created_at": org.created_at, "role": org.role,
                "key_scope": request.auth.scope if isinstance(request.auth, ApiKey) else None,
                "members": members, "audit_limits": audit_limits_body(org.pk)}
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
    "renewals": inline_serializer("RenewalForecast", {
        "overdue": serializers.IntegerField(help_text="Certificates still served past their renewal point: the "
                                                      "end of their CA's ARI window, else 67 % of their life plus "
                                                      "a day's grace (as the expiry alerts judge it)."),
        "due_next_week": serializers.IntegerField(),
        "due_next_30_days": serializers.IntegerField(),
        "summary": serializers.CharField(help_text='"12 renewals due next week, 2 overdue"'),
    }),
})


class PortfolioView(OrgView):
    serializer_class = SiteSerializer

    @extend_schema(summary="Organization summary: grades, expiring certificates, failing sites",
                   parameters=[OpenApiParameter("days", {"type": "integer", "minimum": 0, "maximum": 3650},
                                               description="Expiry horizon in days (default 30).")],
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
            "renewals": forecast_body(renewal_forecast(Site.objects.filter(organization=self.org), timezone.now())),
        })


def forecast_body(forecast) -> dict:
    return {"overdue": forecast.overdue, "due_next_week": forecast.next_week,
            "due_next_30_days": forecast.next_month, "summary": forecast.sentence()}


def parse_horizon(raw: str) -> int:
    if not raw.isdigit() or not 0 <= int(raw) <= 3650:
        raise BadQuery({"days": "Use a whole number of days from 0 to 3650."})
    return int(raw)


# --- the custom CA: certificates the organization's audits and probes trust besides the public stores ------

MAX_PEM_CHARS = customca.MAX_CHARS   # the dashboard's form and the model take the same


class CaCertificateSerializer(serializers.Serializer):
    subject = serializers.CharField()
    issuer = serializers.CharField()
    not_before = serializers.DateTimeField()
    not_after = serializers.DateTimeField()
    fingerprint_sha256 = serializers.CharField()


class CustomCaSerializer(serializers.Serializer):
    pem = serializers.CharField(help_text="The PEM certificates, normalised; empty when none is set.")
    certificates = CaCertificateSerializer(many=True)


class CustomCaWriteSerializer(serializers.Serializer):
    pem = serializers.CharField(max_length=MAX_PEM_CHARS, allow_blank=True, trim_whitespace=False,
                                help_text="One or more -----BEGIN CERTIFICATE----- blocks; empty to remove them.")


def custom_ca_body(org) -> dict:
    return {"pem": org.custom_ca_pem, "certificates": ca_certificates(org.custom_ca_pem)}


class CustomCaView(OrgView):
    """Checked and normalised as the dashboard's settings form does (the same errors)."""

    serializer_class = CustomCaSerializer
    write_action = "manage_org"   # owners and admins, and read-write keys, as in the dashboard

    def get_object(self):
        return self.org   # the one object here (DRF's OPTIONS answer asks for it)

    @extend_schema(summary="The organization's custom CA certificates",
                   description="Audits and browser probes trust these besides the public stores (an internal PKI).")
    def get(self, request):
        return Response(CustomCaSerializer(custom_ca_body(self.org)).data)

    @extend_schema(summary="Set the organization's custom CA certificates", request=CustomCaWriteSerializer,
                   responses={200: CustomCaSerializer})
    def put(self, request):
        body = CustomCaWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        self.save(request, body.validated_data["pem"])
        return Response(CustomCaSerializer(custom_ca_body(self.org)).data)

    @extend_schema(summary="Remove the organization's custom CA certificates", responses={204: None})
    def delete(self, request):
        self.save(request, "")
        return Response(status=status.HTTP_204_NO_CONTENT)

    def save(self, request, pem: str) -> None:
        org = self.org
        form = OrganizationSettingsForm({"name": org.name, "custom_ca_pem": pem}, instance=org)
        if not form.is_valid():
            raise serializers.ValidationError({"pem" if name == "custom_ca_pem" else name: list(errors)
                                               for name, errors in form.errors.items()})
        form.save()
        # Field names only, as the dashboard logs it.
        log(request, "org.settings_changed", org=org, target=org.name, fields=["custom_ca_pem"])
