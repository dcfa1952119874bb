"""PDF reports: one Report row per rendering (status, size, pages and error on the row, the PDF
in storage), and an organization's white-label branding (logo, accent colour)."""

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.urls import reverse

# A logo is stored inline: the PDF is printed from self-contained HTML, and 200 KB is plenty for a logo.
MAX_LOGO_BYTES = 200_000


class ReportBranding(models.Model):
    organization = models.OneToOneField("orgs.Organization", on_delete=models.CASCADE, related_name="report_branding")
    logo_data_uri = models.TextField(blank=True, help_text="data:image/png;base64,... (PNG, JPEG or SVG)")
    accent_color = models.CharField(max_length=7, default="#1f4e9c",
                                    validators=[RegexValidator(r"^#[0-9a-fA-F]{6}$", "A colour like #1f4e9c.")])

    def __str__(self):
        return f"Branding of {self.organization}"


class Report(models.Model):
    class Kind(models.TextChoices):
        SITE = "site", "Site report"
        PORTFOLIO = "portfolio", "Portfolio report"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    organization = models.ForeignKey("orgs.Organization", on_delete=models.CASCADE, related_name="reports")
    site = models.ForeignKey("sites.Site", null=True, blank=True, on_delete=models.CASCADE, related_name="reports",
                             help_text="Empty for a portfolio report of the whole organization.")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    file = models.FileField(upload_to="reports/%Y/%m/", blank=True)
    size = models.PositiveIntegerField(null=True, blank=True, help_text="bytes")
    pages = models.PositiveSmallIntegerField(null=True, blank=True)
    render_s = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "-created_at"])]

    def __str__(self):
        return f"{self.get_kind_display()} {self.pk} ({self.status})"

    def get_absolute_url(self):
        return reverse("reports:detail", args=[self.organization.slug, self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def filename(self) -> str:
        subject = self.organization.slug
        if self.site_id:
            port = self.site.https_port
            subject = self.site.hostname + (f"-{port}" if port != self.site.tls_service.default_port else "")
        return f"tls-report-{subject}-{self.created_at:%Y-%m-%d}.pdf"


# -- scheduled digests (weekly / monthly portfolio PDF emailed to an organization's recipients) --

MAX_DIGEST_RECIPIENTS = 20


def validate_recipients(value):
    """A list of distinct email addresses, at most MAX_DIGEST_RECIPIENTS."""
    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email

    if not isinstance(value, list):
        raise ValidationError("A list of email addresses.")
    if len(value) > MAX_DIGEST_RECIPIENTS:
        raise ValidationError(f"At most {MAX_DIGEST_RECIPIENTS} recipients ({len(value)} given).")
    for address in value:
        if not isinstance(address, str):
            raise ValidationError("A list of email addresses.")
        validate_email(address)
    if len({a.lower() for a in value}) != len(value):
        raise ValidationError("Each address once.")


class ReportSchedule(models.Model):
    class Frequency(models.TextChoices):
        WEEKLY = "weekly", "Weekly"
        MONTHLY = "monthly", "Monthly"
        OFF = "off", "Off"

    organization = models.OneToOneField("orgs.Organization", on_delete=models.CASCADE, related_name="report_schedule")
    frequency = models.CharField(max_length=10, choices=Frequency.choices, default=Frequency.OFF)
    recipients = models.JSONField(default=list, blank=True, validators=[validate_recipients],
                                  help_text=f"Email addresses, at most {MAX_DIGEST_RECIPIENTS}.")
    last_sent_period = models.CharField(max_length=10, blank=True,
                                        help_text='The last period a digest was started for, e.g. "2026-W47" or "2026-11".')
    sent_now_at = models.DateTimeField(null=True, blank=True, help_text='The last "Send now" (at most one per '
                                                                         'DIGEST_SEND_NOW_MINUTES).')

    def __str__(self):
        return f"Digest schedule of {self.organization} ({self.frequency})"


class DigestDelivery(models.Model):
    """One digest email to one recipient for one period: unique, so it is sent once."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    organization = models.ForeignKey("orgs.Organization", on_delete=models.CASCADE, related_name="digest_deliveries")
    schedule = models.ForeignKey(ReportSchedule, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="deliveries")
    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="digest_deliveries")
    period = models.CharField(max_length=20, help_text='"2026-W47", "2026-11", or "now-20261130T0135" for a '
                                                       '"Send now".')
    recipient = models.EmailField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "digest deliveries"
        constraints = [models.UniqueConstraint(fields=["organization", "period", "recipient"],
                                               name="digest_once_per_period_and_recipient")]

    def __str__(self):
        return f"Digest {self.period} to {self.recipient} ({self.status})"
