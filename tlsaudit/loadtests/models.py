"""What a site owner proved (SiteVerification), what an organization may send (LoadLimits) and
one performance run (PerfRun): status, progress, results and summary live on the row."""

import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from tlsaudit.domain import ownership


def new_secret() -> str:
    return secrets.token_hex(16)


new_token = new_secret     # the name migration 0001 imports


def new_public_id() -> str:
    return secrets.token_hex(8)


def proof_subject(site) -> str:
    """Where a run's traffic goes: host name, both ports and the pinned IP. A proof covers the subject
    it was made for; changing any part of it withdraws the proof."""
    return f"{site.hostname.lower()} http:{site.http_port} https:{site.https_port} ip:{site.pinned_ip or '-'}"


class SiteVerification(models.Model):
    """Proof that the site's owner asked for load: a file on the site or a DNS TXT record.

    The file's URL names `public_id`; what the file (or the record) must hold is the `secret`, which
    therefore never travels in a request of ours (an echoing server cannot hand it back)."""

    class Method(models.TextChoices):
        HTTP = "http", "HTTP file"
        DNS = "dns", "DNS TXT record"

    site = models.OneToOneField("sites.Site", on_delete=models.CASCADE, related_name="verification")
    public_id = models.CharField(max_length=32, unique=True, default=new_public_id, editable=False)
    secret = models.CharField(max_length=64, default=new_secret, editable=False)
    method = models.CharField(max_length=4, choices=Method.choices, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    proved_for = models.CharField(max_length=400, blank=True, default="",
                                  help_text="proof_subject(site) when it was proven")
    # The addresses that served the file (a DNS record proves the name, not a server): load goes only there.
    proved_ips = models.JSONField(default=list, blank=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"Verification of {self.site} ({'verified' if self.is_verified else 'not verified'})"

    @property
    def is_verified(self) -> bool:
        return self.verified_at is not None and self.proved_for == proof_subject(self.site)

    @property
    def site_changed(self) -> bool:
        """Proven, but for another host name, port or pinned IP than the site has now."""
        return self.verified_at is not None and self.proved_for != proof_subject(self.site)

    @property
    def is_stale(self) -> bool:
        """Verified, but longer ago than VERIFICATION_MAX_AGE_DAYS: re-check before the next run."""
        max_age = timedelta(days=settings.VERIFICATION_MAX_AGE_DAYS)
        return self.is_verified and (self.last_checked_at or self.verified_at) < timezone.now() - max_age

    def record_pass(self, method: str, at, ips=()) -> None:
        self.method, self.verified_at, self.last_checked_at = method, at, at
        self.proved_for, self.proved_ips, self.last_error = proof_subject(self.site), sorted(set(ips)), ""

    def record_failure(self, message: str, at) -> None:
        self.verified_at, self.proved_for, self.last_checked_at, self.last_error = None, "", at, message
        self.proved_ips = []

    @property
    def file_name(self) -> str:
        return f"tlsaudit-{self.public_id}.txt"

    @property
    def file_path(self) -> str:
        return f"/.well-known/{self.file_name}"

    @property
    def file_content(self) -> str:
        return ownership.proof_value(self.secret)

    @property
    def txt_name(self) -> str:
        return f"_tlsaudit.{self.site.hostname}"

    @property
    def txt_value(self) -> str:
        return ownership.proof_value(self.secret)


class LoadLimits(models.Model):
    """Per-organization caps on the traffic we send on its behalf (defaults from settings)."""

    organization = models.OneToOneField("orgs.Organization", on_delete=models.CASCADE, related_name="load_limits")
    max_concurrency = models.PositiveIntegerField(default=0)
    max_requests_per_run = models.PositiveIntegerField(
        default=0, help_text="Per ab-style run: a sweep level, or one handshake cell.")
    max_duration_s = models.PositiveIntegerField(default=0)
    runs_per_day = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name_plural = "load limits"

    def __str__(self):
        return f"Load limits of {self.organization}"

    @classmethod
    def for_org(cls, org) -> "LoadLimits":
        limits, _ = cls.objects.get_or_create(organization=org, defaults={
            "max_concurrency": settings.LOAD_MAX_CONCURRENCY,
            "max_requests_per_run": settings.LOAD_MAX_REQUESTS_PER_RUN,
            "max_duration_s": settings.LOAD_MAX_DURATION_S,
            "runs_per_day": settings.LOAD_RUNS_PER_DAY,
        })
        return limits


class PerfRun(models.Model):
    class Kind(models.TextChoices):
        LOAD = "load", "Load test"
        SWEEP = "sweep", "HTTP vs HTTPS sweep"
        HANDSHAKES = "handshakes", "Handshake timing"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    site = models.ForeignKey("sites.Site", on_delete=models.CASCADE, related_name="perf_runs")
    organization = models.ForeignKey("orgs.Organization", on_delete=models.CASCADE, related_name="perf_runs")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    params = models.JSONField(default=dict, blank=True, help_text="validated by services.validate_params")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    # {"steps": [{"label": ..., "status": ...}], "current": i}
    progress = models.JSONField(default=dict, blank=True)
    # Requests (or handshakes) finished / planned: agents add to `work_done` atomically.
    work_done = models.PositiveIntegerField(default=0)
    work_total = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True, help_text="started + the org's max duration")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    host = models.CharField(max_length=253, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    # The target locks (core.locks keys) its start task took and handed to it: what its end releases.
    lock_keys = models.JSONField(default=list, blank=True)
    error_code = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)
    # One entry per finished step: {"step": i, "label", "scheme", "level", "mode", "result", "report"}
    # (load/sweep; `result` is the merged LoadResult dict without per-request samples) or
    # {"step": i, "label", "cell", "result"} (handshakes).
    results = models.JSONField(default=list, blank=True)
    summary = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["site", "-created_at"]), models.Index(fields=["organization", "-created_at"])]

    def __str__(self):
        return f"{self.get_kind_display()} {self.pk} of {self.site} ({self.status})"

    def get_absolute_url(self):
        return reverse("loadtests:run", args=[self.site.organization.slug, self.site_id, self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED, self.Status.CANCELLED)

    @property
    def percent(self) -> int:
        if self.is_finished:
            return 100
        return min(99, round(100 * self.work_done / self.work_total)) if self.work_total else 0
