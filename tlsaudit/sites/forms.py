from django import forms
from django.conf import settings

from tlsaudit.domain.hostnames import AddressError, parse_address, parse_port, parse_tags
from tlsaudit.domain.netguard import parse_ip_literal, refusal_reason
from tlsaudit.domain.services import HTTPS, SERVICE_CHOICES, UnknownService, service_named
from tlsaudit.sites.models import Site, Tag
from tlsaudit.sites.services import site_added
from workers.net.errors import PRIVATE_TARGET, TargetError
from workers.net.target import resolve_target

MAX_IMPORT_LINES = 1000
MAX_IMPORT_BYTES = 512 * 1024


class SiteForm(forms.ModelForm):
    """One site. Also validates each line of a bulk import, so both give the same errors."""

    address = forms.CharField(
        label="Host name", max_length=300,
        help_text="example.com, example.com:8443 or https://example.com/ — international names are fine. "
                  "Another TLS service: smtp://mail.example.com, imaps://…, ldap://…, postgres://… "
                  "(its usual port unless you type one).",
        widget=forms.TextInput(attrs={"placeholder": "example.com", "autofocus": True}))
    # A text field under a select, so an unknown name (CSV, API) gets service_named's message, aliases included.
    service = forms.CharField(
        label="Service", required=False, max_length=20,
        widget=forms.Select(choices=[("", "From the address (HTTPS when it names none)"), *SERVICE_CHOICES]),
        help_text="What speaks TLS on the port; STARTTLS services are upgraded as a mail client would.")
    tags_text = forms.CharField(label="Tags", required=False, max_length=400,
                                help_text="Comma-separated, e.g. client-a, production.")
    # Text fields, so a bad port gets our message rather than "Enter a whole number".
    https_port = forms.CharField(label="TLS port", required=False, max_length=10,
                                 help_text="The TLS port: 443 for HTTPS, otherwise the service's usual port "
                                           "(25 for SMTP, 993 for IMAPS…) unless you type one.",
                                 widget=forms.TextInput(attrs={"placeholder": "443", "inputmode": "numeric"}))
    http_port = forms.CharField(label="HTTP port", required=False, max_length=10,
                                widget=forms.TextInput(attrs={"placeholder": "80", "inputmode": "numeric"}))

    class Meta:
        model = Site
        fields = ["https_port", "http_port", "pinned_ip", "name"]
        labels = {"pinned_ip": "Pinned IP (optional)",
                  "name": "Display name (optional)"}
        help_texts = {"pinned_ip": "Scan this address instead of resolving the host name "
                                   "(a staging server, or one node behind a load balancer)."}

    # The host name first: it is the one field every site needs (declared fields would come last).
    field_order = ["address", "service", "name", "https_port", "http_port", "pinned_ip", "tags_text"]

    def __init__(self, *args, org, check_dns=True, **kwargs):
        super().__init__(*args, **kwargs)
        self.org = org
        # Bulk imports skip the lookup (1,000 lookups in one request); the scan re-checks anyway.
        self.check_dns = check_dns
        if self.instance.pk:
            # An SMTP site is edited as smtp://host, so saving it unchanged keeps its service.
            self.initial.setdefault("address", address_of(self.instance))
            self.initial.setdefault("tags_text", ", ".join(t.name for t in self.instance.tags.all()))

    def clean_address(self):
        try:
            self.parsed = parse_address(self.cleaned_data["address"], services=True)
        except AddressError as exc:
            raise forms.ValidationError(str(exc)) from None
        return self.parsed.hostname

    def clean_service(self):
        chosen = (self.cleaned_data.get("service") or "").strip()
        try:
            return service_named(chosen).scheme if chosen else ""
        except UnknownService as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_https_port(self):
        return self._port("https_port")

    def clean_http_port(self):
        return self._port("http_port")

    def _port(self, field):
        value = self.cleaned_data.get(field, "").strip()
        if not value:
            return None
        try:
            return parse_port(value)
        except AddressError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_pinned_ip(self):
        ip = self.cleaned_data.get("pinned_ip")
        if ip and not settings.ALLOW_PRIVATE_TARGETS:
            reason = refusal_reason(ip)
            if reason:
                raise forms.ValidationError(f"{ip} cannot be audited: {reason}.")
        return ip

    def clean_tags_text(self):
        try:
            return parse_tags(self.cleaned_data["tags_text"])
        except AddressError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        data = super().clean()
        parsed = getattr(self, "parsed", None)
        if parsed is None:
            return data
        data["service"] = self._service_of(parsed, data.get("service") or "")
        self._apply_address_port(parsed, data)
        data.setdefault("http_port", None)
        data["https_port"] = self._tls_port(parsed, data)
        data["http_port"] = data.get("http_port") or 80
        self._refuse_private_hostname(parsed.hostname)
        duplicate = Site.objects.filter(organization=self.org, hostname=parsed.hostname,
                                        https_port=data["https_port"]).exclude(pk=self.instance.pk)
        # One site per (host, port) whatever the service: a port speaks one protocol, so smtp:// and
        # smtps:// on the same port cannot both be right (docs/decisions.md).
        if duplicate.exists():
            self.add_error("address", forms.ValidationError(
                f"{duplicate.first().display_origin} is already in this organization.", code="duplicate"))
        return data

    def _service_of(self, parsed, chosen: str) -> str:
        """The address's scheme names the service (http:// and https:// are HTTPS); the Service field may
        say it instead, but not contradict it; neither: HTTPS."""
        if parsed.scheme is None:
            return chosen or HTTPS
        named = HTTPS if parsed.scheme in ("http", "https") else parsed.scheme
        if chosen and chosen != named:
            self.add_error("service", f"The address says {parsed.scheme}:// but this field says "
                                      f"{service_named(chosen).label}: change one of them.")
        return named

    def _tls_port(self, parsed, data) -> int:
        """The typed port, else the service's usual one. An edit that changes the service and leaves the
        old service's usual port in place moves to the new one (https:443 edited to smtp:// is smtp:25)."""
        port, default = data.get("https_port"), service_named(data["service"]).default_port
        old = self.instance
        if (old.pk and parsed.port is None and data["service"] != old.service
                and port == old.tls_service.default_port):
            return default
        return port or default

    def _apply_address_port(self, parsed, data):
        if parsed.port is None:
            return
        # http://host:8080 names the HTTP port; any other scheme names the TLS port.
        field = "http_port" if parsed.scheme == "http" else "https_port"
        typed = data.get(field)
        if typed and typed != parsed.port:
            self.add_error(field, f"The address says port {parsed.port} but this field says {typed}.")
        data[field] = parsed.port

    def _refuse_private_hostname(self, hostname):
        """Refuse a host that is, or resolves to, a non-public address (SSRF). A name that does
        not resolve yet is accepted: the audit will say so, and the owner may be pre-launch."""
        if settings.ALLOW_PRIVATE_TARGETS or self.cleaned_data.get("pinned_ip"):
            return  # a pinned IP was checked on its own and is the only address ever used
        if not self.check_dns and parse_ip_literal(hostname) is None:
            return
        try:
            resolve_target(hostname, self.cleaned_data.get("https_port") or 443, timeout=3.0,
                           resolver=settings.DNS_RESOLVER)
        except TargetError as exc:
            if exc.code == PRIVATE_TARGET:
                self.add_error("address", exc.message)

    def save(self, commit=True):
        site = super().save(commit=False)
        site.organization = self.org
        site.hostname = self.cleaned_data["address"]
        site.https_port = self.cleaned_data["https_port"]
        site.service = self.cleaned_data["service"]
        site.http_port = self.cleaned_data["http_port"]
        if commit:
            new = site._state.adding
            site.save()
            self.save_tags(site)
            if new:   # what save_from_form does: a new site gets its schedule whichever way it is saved
                site_added(site)
        return site

    def save_tags(self, site):
        tags = [Tag.objects.get_or_create(organization=self.org, name=name)[0]
                for name in self.cleaned_data["tags_text"]]
        site.tags.set(tags)


def address_of(site) -> str:
    """What the edit form shows: the host for HTTPS, the service's URL otherwise (smtp://mail.example.com,
    ldap://[2001:db8::1]), so that saving it unchanged keeps the service."""
    host = site.display_hostname
    if site.is_http:
        return host
    return f"{site.service}://[{host}]" if ":" in host else f"{site.service}://{host}"


class BulkImportForm(forms.Form):
    lines = forms.CharField(
        required=False, label="Paste sites",
        widget=forms.Textarea(attrs={"rows": 8, "placeholder": "example.com\nshop.example.com:8443 203.0.113.7\nhttps://blog.example.org/"}),
        help_text="One site a line: <code>host[:port]</code> (or a service URL such as <code>smtp://mail.example.com</code>), optionally followed by a space and the IP to scan "
                  "instead of resolving the name (<code>lab.example:8443 10.0.0.5</code>). Lines starting with # "
                  "are ignored.")
    csv_file = forms.FileField(
        required=False, label="…or upload a CSV",
        help_text="Columns hostname, https_port, http_port, pinned_ip, name, tags, service, read by their names "
                  "in a header row in any order (other columns are ignored, so the API's sites.csv imports as "
                  "it is), or in that order without one; separated by commas, semicolons or tabs. The service, "
                  "e.g. smtp, may also come as smtp://host in the hostname column.")
    tags_text = forms.CharField(label="Tags for every imported site", required=False, max_length=400)

    def clean_csv_file(self):
        upload = self.cleaned_data.get("csv_file")
        if upload is None:
            return None
        if upload.size > MAX_IMPORT_BYTES:
            raise forms.ValidationError(f"The file is {upload.size // 1024} KB; the limit is "
                                        f"{MAX_IMPORT_BYTES // 1024} KB.")
        try:
            return upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise forms.ValidationError("The file is not UTF-8 text: save it as CSV (UTF-8).") from None

    def clean_tags_text(self):
        try:
            return parse_tags(self.cleaned_data["tags_text"])
        except AddressError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        data = super().clean()
        if not (data.get("lines") or "").strip() and not data.get("csv_file"):
            if not self.errors:
                raise forms.ValidationError("Paste at least one host name or choose a CSV file.")
        return data
