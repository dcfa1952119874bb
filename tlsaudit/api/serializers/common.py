"""Shapes shared by several API resources. Writes validate through the dashboard's forms, so
the API and the dashboard give the same error for the same input."""

from rest_framework import serializers

from tlsaudit.api.base import FieldsMixin
from tlsaudit.api.errors import Conflict
from tlsaudit.api.links import object_url
from tlsaudit.domain.hostnames import AddressError, parse_address
from tlsaudit.domain.services import SERVICES
from tlsaudit.sites.forms import SiteForm
from tlsaudit.sites.models import Site
from tlsaudit.sites.services import save_from_form

ALL_GRADES = ("A+", "A", "A-", "B", "C", "D", "E", "F", "T", "M")
# Form field → API field, so errors name what the caller sent.
FORM_TO_API = {"address": "hostname", "tags_text": "tags", "__all__": "__all__"}


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable, machine-readable, e.g. validation_error, read_only_key.")
    message = serializers.CharField(help_text="For people: what went wrong and what to do.")
    fields = serializers.DictField(child=serializers.ListField(child=serializers.CharField()),
                                   help_text="Field name → messages; `__all__` for the request as a whole.")


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


class CreatedWorkSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField(help_text="Poll it: an audit starts by itself once the queue is back.")
    status = serializers.CharField(help_text="queued (an audit, sent once the queue is back) or failed (a run, a "
                                             "probe, a report or a delivery: start it again).")


class NotQueuedSerializer(serializers.Serializer):
    error = ErrorBodySerializer()
    queued = serializers.BooleanField(help_text="false: the work was created but is not in the task queue.")
    created = CreatedWorkSerializer(help_text="The work that was created (also in `Location`).")


class SiteSerializer(FieldsMixin, serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    display_hostname = serializers.CharField(read_only=True)
    origin = serializers.CharField(read_only=True, help_text="example.com, example.com:8443 for HTTPS; "
                                   "the service's URL otherwise: smtp://mail.example.com:25.")
    service = serializers.ChoiceField(choices=list(SERVICES), read_only=True,
                                      help_text="What speaks TLS on `https_port`: https, or smtp, imaps, ldap... "
                                                "(STARTTLS where the service starts in clear text).")
    tags = serializers.SerializerMethodField()
    last_audit = serializers.SerializerMethodField()
    certificate_not_after = serializers.DateTimeField(read_only=True, allow_null=True,
                                                      help_text="Leaf certificate expiry, from the latest audit.")
    renewal_window_start = serializers.DateTimeField(
        read_only=True, allow_null=True,
        help_text="Start of the renewal window the leaf's CA suggests (ACME Renewal Information, RFC 9773); "
                  "null when its CA publishes none we know.")
    renewal_window_end = serializers.DateTimeField(read_only=True, allow_null=True,
                                                   help_text="End of that window: renew before it.")
    renewal_window_moved_from = serializers.DateTimeField(
        read_only=True, allow_null=True,
        help_text="Where the window ended before the CA moved it earlier (usually ahead of a revocation); "
                  "null when it never moved.")

    class Meta:
        model = Site
        fields = ["id", "url", "hostname", "display_hostname", "origin", "service", "name", "https_port", "http_port",
                  "pinned_ip", "tags", "created_at", "last_grade", "last_audit_status", "last_audit_at",
                  "last_audit", "certificate_not_after", "renewal_window_start", "renewal_window_end",
                  "renewal_window_moved_from"]
        read_only_fields = fields

    def get_url(self, site) -> str:
        return object_url("api:site-detail", site.pk)

    def get_tags(self, site) -> list[str]:
        return sorted(tag.name for tag in site.tags.all())

    def get_last_audit(self, site) -> str | None:
        return object_url("api:audit-detail", site.last_audit_id) if site.last_audit_id else None


class SiteWriteSerializer(serializers.Serializer):
    """Validated by SiteForm (IDN names, pasted URLs, ports, duplicates, private targets)."""

    hostname = serializers.CharField(max_length=300, help_text="example.com, example.com:8443, "
                                     "https://example.com/ or an international name; another TLS service "
                                     "as its URL: smtp://mail.example.com, imaps://mail.example.com:993.")
    # Text, so an unknown name gets the form's message (with the known ones), as an unknown scheme does.
    service = serializers.CharField(required=False, max_length=20, help_text=(
        "One of " + ", ".join(SERVICES) + ". Optional: a URL in `hostname` names it, and it may not "
        "contradict that; neither gives https. A PATCH that leaves both out keeps the site's service."))
    https_port = serializers.IntegerField(required=False, min_value=1, max_value=65535, help_text=(
        "The TLS port, whatever the service; default: the service's usual port (443, 25 for smtp...)."))
    http_port = serializers.IntegerField(required=False, min_value=1, max_value=65535)
    pinned_ip = serializers.IPAddressField(required=False, allow_null=True, allow_blank=True)
    name = serializers.CharField(required=False, allow_blank=True, max_length=120)
    tags = serializers.ListField(child=serializers.CharField(max_length=40), required=False, max_length=20)

    def validate(self, attrs):
        self.form = SiteForm(self.form_data(attrs), org=self.context["org"], instance=self.instance,
                             check_dns=self.context.get("check_dns", True))
        if not self.form.is_valid():
            if self.form.has_error("address", code="duplicate"):
                raise Conflict(" ".join(self.form.errors["address"]), code="duplicate_site")
            raise serializers.ValidationError({FORM_TO_API.get(name, name): list(errors)
                                               for name, errors in self.form.errors.items()})
        return attrs

    def form_data(self, attrs) -> dict:
        """A PATCH keeps what it does not mention; a PUT replaces everything."""
        current = self.current_values(attrs) if self.partial and self.instance else {}
        merged = {**current, **{("address" if k == "hostname" else k): v for k, v in attrs.items()}}
        return {"address": merged.get("address", ""), "https_port": str(merged.get("https_port") or ""),
                "http_port": str(merged.get("http_port") or ""), "pinned_ip": merged.get("pinned_ip") or "",
                "name": merged.get("name", ""), "tags_text": ", ".join(merged.get("tags", [])),
                "service": merged.get("service", "")}

    def current_values(self, attrs) -> dict:
        site = self.instance
        current = {"address": site.hostname, "https_port": site.https_port, "http_port": site.http_port,
                   "pinned_ip": site.pinned_ip or "", "name": site.name, "service": site.service,
                   "tags": [tag.name for tag in site.tags.all()]}
        if "hostname" in attrs and address_port(attrs["hostname"]) is not None:
            # The new address names its port: the old ports must not contradict it.
            current.pop("https_port"), current.pop("http_port")
        if "hostname" in attrs and address_scheme(attrs["hostname"]) is not None:
            current.pop("service")  # the new address names its service: the old one must not contradict it
        return current

    def save(self, **kwargs):
        return save_from_form(self.form, **kwargs)


def address_port(address: str) -> int | None:
    try:
        return parse_address(address, services=True).port
    except AddressError:
        return None


def address_scheme(address: str) -> str | None:
    try:
        return parse_address(address, services=True).scheme
    except AddressError:
        return None


class BulkSitesSerializer(serializers.Serializer):
    sites = serializers.ListField(child=serializers.DictField(), min_length=1, max_length=1000,
                                  help_text="Up to 1,000 site objects, as for a single create.")


class BulkItemSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="The item's position in `sites`, from 0.")
    created = serializers.BooleanField()
    site = SiteSerializer(allow_null=True, help_text="The new site; null when it was not created.")
    error = ErrorBodySerializer(allow_null=True, help_text="Why it was not created; null when it was.")


class BulkResultSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="How many sites were created.")
    failed = serializers.IntegerField(help_text="How many items were refused (see their `error`).")
    results = BulkItemSerializer(many=True, help_text="One per item, in the order sent.")
