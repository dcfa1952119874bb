"""One browser-timing probe of a site: real Chromium page loads over HTTP and HTTPS, cold and warm.

Status, progress (loads done / total and the current step), the engine's result JSON and the
summary derived from it (tlsaudit.domain.probe_stats) live on the row; the page reads the row.
"""

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from tlsaudit.domain.probe_stats import SETUP_S as PROBE_SETUP_S


class Probe(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    site = models.ForeignKey("sites.Site", on_delete=models.CASCADE, related_name="probes")
    organization = models.ForeignKey("orgs.Organization", on_delete=models.CASCADE, related_name="probes")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    # {"path": "/", "runs": 20, "seconds": 20, "variants": ["https", "http"]} (services.validate_params);
    # older probes have no "seconds": they ran exactly `runs` rounds.
    params = models.JSONField(default=dict, blank=True)
    loads_done = models.PositiveIntegerField(default=0)
    loads_total = models.PositiveIntegerField(default=0)
    current_step = models.CharField(max_length=120, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # The process that claimed it (core.runners.this_process): the reaper on the same host sees it die.
    runner = models.CharField(max_length=255, blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    host = models.CharField(max_length=253, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    error_code = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)

    result = models.JSONField(null=True, blank=True, help_text="the engine's JSON (workers/browser/spec.py)")
    summary = models.JSONField(default=dict, blank=True, help_text="medians, spread, increase % (probe_stats)")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["site", "-created_at"]), models.Index(fields=["organization", "-created_at"])]

    def __str__(self):
        return f"Probe {self.pk} of {self.site} ({self.status})"

    def get_absolute_url(self):
        return reverse("probes:detail", args=[self.site.organization.slug, self.site_id, self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def percent(self) -> int:
        """Of the loads planned; of the planned time for a probe sized by time (its load count is a cap)."""
        if self.is_finished:
            return 100
        seconds = self.params.get("seconds")
        if seconds and self.started_at:
            elapsed = (timezone.now() - self.started_at).total_seconds()
            return min(99, round(100 * elapsed / (seconds + PROBE_SETUP_S)))
        return min(99, round(100 * self.loads_done / self.loads_total)) if self.loads_total else 0

    @property
    def rounds_done(self) -> int:
        """Measured rounds (each: HTTPS and HTTP, cold and warm): the most loads of one variant and mode."""
        cells = (self.summary or {}).get("summary") or {}
        return max((cell.get("samples") or 0 for cell in cells.values()), default=0)

    @property
    def plan_text(self) -> str:
        seconds = self.params.get("seconds")
        runs = self.params.get("runs")
        return f"{seconds} s, at most {runs} rounds" if seconds else f"{runs} rounds"
