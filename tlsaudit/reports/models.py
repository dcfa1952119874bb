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
        subject = self.site.hostname if self.site_id else self.organization.slug
        return f"tls-report-{subject}-{self.created_at:%Y-%m-%d}.pdf"
