from django.conf import settings
from django.db import models
from django.urls import reverse

from tlsaudit.core.validators import no_control_characters
from tlsaudit.domain.hostnames import display_hostname
from tlsaudit.domain.services import HTTPS, SERVICE_CHOICES, Service, service_named


class Tag(models.Model):
    organization = models.ForeignKey("orgs.Organization", on_delete=models.CASCADE, related_name="tags")
    name = models.CharField(max_length=40, validators=[no_control_characters])

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="unique_tag_per_org")]
        ordering = ["name"]

    def __str__(self):
        return self.name


def tagged(sites, organization_id: int, name: str):
    """`sites` carrying the organization's tag `name`. The tag is looked up by (organization, name), its
    unique index: filtering on `tags__name` alone joined every organization's tag of that name (33,000
    rows for 100 agencies tagging "eu")."""
    return sites.filter(tags__in=Tag.objects.filter(organization_id=organization_id, name=name).values("pk"))


class Site(models.Model):
    """A TLS service to audit (an HTTPS origin unless `service` says otherwise): host name, ports and,
    optionally, the IP to connect to."""

    organization = models.ForeignKey("orgs.Organization", on_delete=models.CASCADE, related_name="sites")
    hostname = models.CharField(max_length=253, help_text="ASCII form (punycode for IDNs).")
    https_port = models.PositiveIntegerField(default=443)  # the TLS port, whatever the service
    # What speaks TLS on https_port (domain/services.py): HTTPS, or a mail/directory/chat/file/database
    # service, with STARTTLS where the service starts in clear text.
    service = models.CharField(max_length=10, choices=SERVICE_CHOICES, default=HTTPS)
    http_port = models.PositiveIntegerField(default=80)
    pinned_ip = models.GenericIPAddressField(
        null=True, blank=True, help_text="Connect to this address instead of resolving the host name.")
    name = models.CharField(max_length=120, blank=True, validators=[no_control_characters])
    tags = models.ManyToManyField(Tag, blank=True, related_name="sites")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    # Denormalised from the latest finished audit, so lists never join the audit history.
    last_audit = models.ForeignKey("audits.Audit", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_audit_at = models.DateTimeField(null=True, blank=True)
    last_audit_status = models.CharField(max_length=10, blank=True)
    last_grade = models.CharField(max_length=2, blank=True, db_index=True)
    # From the latest *done* audit and the one before it (a failed night keeps them), so the
    # portfolio's trend and certificate expiry need no query per site.
    latest_score = models.PositiveSmallIntegerField(null=True, blank=True)
    previous_score = models.PositiveSmallIntegerField(null=True, blank=True)
    cert_expires_at = models.DateTimeField(null=True, blank=True, help_text="earliest leaf not_after")
    cert_renew_at = models.DateTimeField(null=True, blank=True,
                                         help_text="when the served leaf is overdue for renewal: its CA's ARI "
                                                   "window end, else two thirds of its life plus a day's grace "
                                                   "(the portfolio's forecast)")
    pq_ready = models.BooleanField(null=True, blank=True,
                                   help_text="accepts a hybrid post-quantum group; null = not tested")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "hostname", "https_port"], name="unique_site_per_org"),
        ]
        # (organization, cert_expires_at): the portfolio's expiry card reads the soonest expiries.
        indexes = [models.Index(fields=["organization", "hostname"]),
                   models.Index(fields=["organization", "cert_expires_at"], name="site_org_expiry"),
                   models.Index(fields=["organization", "cert_renew_at"], name="site_org_renewal")]
        ordering = ["hostname", "https_port"]

    def __str__(self):
        return self.label

    @property
    def display_hostname(self) -> str:
        return display_hostname(self.hostname)

    @property
    def tls_service(self) -> Service:
        return service_named(self.service)

    @property
    def is_http(self) -> bool:
        """Whether the HTTP-only tools (HSTS, load tests, the browser probe) mean anything here."""
        return self.tls_service.http

    @property
    def label(self) -> str:
        # The port is part of the name (staging on :8443 beside production on :443), and another service
        # names itself (smtp://mail.example.com:25), so it never reads as the host's website.
        return self.name or self.display_origin

    @property
    def origin(self) -> str:
        return service_origin(self.service, self.hostname, self.https_port)

    @property
    def display_origin(self) -> str:
        return service_origin(self.service, self.display_hostname, self.https_port)

    @property
    def display_url(self) -> str:
        """What to type to reach it: https://example.com/, or the service's own URL (smtp://mail.example.com:25)."""
        return f"https://{self.display_origin}/" if self.is_http else self.display_origin

    def get_absolute_url(self):
        return reverse("sites:detail", args=[self.organization.slug, self.pk])


def service_origin(service: str, host: str, port: int) -> str:
    """`example.com` / `example.com:8443` for HTTPS; any other service names itself and its
    port, since smtp on 25 and on 587 are different things: `smtp://mail.example.com:25`."""
    host = f"[{host}]" if ":" in host else host
    if service == HTTPS:
        return host if port == 443 else f"{host}:{port}"
    return f"{service}://{host}:{port}"
