"""One Audit row per scan run: status and progress on the row, the scan's inputs kept (so the
grade can be re-derived when the rules change) and the results normalised for queries."""

from django.conf import settings
from django.db import models
from django.urls import reverse

from tlsaudit.domain.scanfacts import ScanFacts
from tlsaudit.domain.services import HTTPS, SERVICE_CHOICES


class Audit(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Trigger(models.TextChoices):
        MANUAL = "manual", "Manual"
        SCHEDULE = "schedule", "Nightly schedule"
        API = "api", "API"

    # No single-column indexes on these two: the composite ones below lead with them, and PostgreSQL picked the
    # single-column one and sorted the organization's whole history for the API's first page (14.5 ms at
    # 1,000 sites x 10 nights, 0.28 ms from audit_org_newest_id).
    site = models.ForeignKey("sites.Site", on_delete=models.CASCADE, related_name="audits", db_index=False)
    organization = models.ForeignKey("orgs.Organization", on_delete=models.CASCADE, related_name="audits",
                                     db_index=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.MANUAL)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Crash recovery (services.reap_abandoned): when it (re-)entered the queue, when its task message was last
    # sent (empty: the broker refused it, the reaper sends it once the broker answers), and the last sign
    # of life of the run that claimed it (attempt number `attempts`).
    queued_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # The process that claimed it (core.runners.this_process): a reaper or a redelivery on the same
    # host can see that it died without waiting for the lease. Empty when queued.
    runner = models.CharField(max_length=255, blank=True)
    # While a queued audit waits for its turn at an address other sites share: why, in words.
    turn_note = models.CharField(max_length=300, blank=True)
    # [{"name": "tls_1_2_cipher_suites", "status": "done", "t": 1.23}, ...] appended as checks finish
    progress = models.JSONField(default=list, blank=True)

    # What was scanned (the pinned IP is the one connected to).
    host = models.CharField(max_length=253, blank=True)
    port = models.PositiveIntegerField(null=True, blank=True)
    # The site's service when it was queued, like host and port; once done, the service the scan spoke
    # (the run takes the site as it is then, so an edit in between shows here).
    service = models.CharField(max_length=10, choices=SERVICE_CHOICES, default=HTTPS)
    ip = models.GenericIPAddressField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    timings = models.JSONField(default=dict, blank=True)

    error_code = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)
    error_detail = models.TextField(blank=True)

    # Inputs, kept whole.
    facts = models.JSONField(null=True, blank=True)
    raw = models.JSONField(null=True, blank=True, help_text="sslyze JSON, rejected suites dropped")
    mozilla_raw = models.JSONField(null=True, blank=True, help_text="sslyze's Mozilla checker output")

    # Derived (re-derivable from the inputs by `manage.py regrade`).
    rules_version = models.CharField(max_length=40, blank=True)
    grade = models.CharField(max_length=2, blank=True, db_index=True)
    grade_ignoring_trust = models.CharField(max_length=2, blank=True)
    score = models.PositiveSmallIntegerField(null=True, blank=True)
    report = models.JSONField(null=True, blank=True)
    protocols = models.JSONField(default=list, blank=True)
    best_profile = models.CharField(max_length=12, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["site", "-created_at"]), models.Index(fields=["organization", "-created_at"]),
                   # A site's done audits newest first: history, "since the previous audit", summaries.
                   models.Index(fields=["site", "status", "-finished_at"], name="audit_site_status_finished"),
                   # The API pages audits by id, newest first: without these, PostgreSQL walks the primary
                   # key backwards past every other organization's newer audits (0.8 s on a seeded year).
                   models.Index(fields=["organization", "-id"], name="audit_org_newest_id"),
                   models.Index(fields=["site", "-id"], name="audit_site_newest_id")]

    def __str__(self):
        return f"Audit {self.pk} of {self.site} ({self.status})"

    def get_absolute_url(self):
        return reverse("audits:detail", args=[self.site.organization.slug, self.site_id, self.pk])

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    def scan_facts(self) -> ScanFacts | None:
        return ScanFacts.from_dict(self.facts) if self.facts else None


class AuditFinding(models.Model):
    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="findings")
    finding_id = models.CharField(max_length=60)
    severity = models.CharField(max_length=10)
    status = models.CharField(max_length=12)   # fail / pass / not_tested / info
    title = models.CharField(max_length=200)
    explanation = models.TextField(blank=True)
    evidence = models.TextField(blank=True)
    reason = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["finding_id", "status"])]

    def __str__(self):
        return f"{self.finding_id}: {self.status}"


class AuditSuite(models.Model):
    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="suites")
    protocol = models.CharField(max_length=8)
    name = models.CharField(max_length=80)
    openssl_name = models.CharField(max_length=80, blank=True)
    key_exchange = models.CharField(max_length=12)
    bits = models.PositiveSmallIntegerField()
    kx_bits = models.PositiveSmallIntegerField(null=True, blank=True)
    kx_curve = models.CharField(max_length=40, blank=True)
    forward_secret = models.BooleanField()
    aead = models.BooleanField()
    strength = models.CharField(max_length=12)   # strong / acceptable / weak / insecure
    preference = models.PositiveSmallIntegerField(null=True, blank=True, help_text="1 = server's first choice")

    class Meta:
        ordering = ["protocol", "preference", "name"]

    def __str__(self):
        return f"{self.protocol} {self.name}"


class AuditCertificate(models.Model):
    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="certificates")
    deployment = models.PositiveSmallIntegerField(default=0)
    position = models.PositiveSmallIntegerField(help_text="0 = leaf, as sent by the server")
    subject = models.TextField()
    issuer = models.TextField()
    not_before = models.DateTimeField()
    not_after = models.DateTimeField()
    key_type = models.CharField(max_length=10)
    key_bits = models.PositiveIntegerField()
    signature_hash = models.CharField(max_length=20, blank=True)
    fingerprint_sha256 = models.CharField(max_length=64)
    san_dns = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["deployment", "position"]
        indexes = [models.Index(fields=["not_after"])]

    def __str__(self):
        return self.subject


class RenewalInfo(models.Model):
    """What the issuing CA's ACME Renewal Information (RFC 9773) says about a site's served certificate:
    the window in which to renew it, as last fetched after an audit. One row per site and certificate."""

    class Status(models.TextChoices):
        OK = "ok", "Window known"
        UNKNOWN = "unknown", "Not known to the CA"
        FAILED = "failed", "Could not be fetched"

    site = models.ForeignKey("sites.Site", on_delete=models.CASCADE, related_name="renewal_infos")
    fingerprint = models.CharField(max_length=64)
    ca_name = models.CharField(max_length=100)
    cert_id = models.CharField(max_length=200, blank=True, help_text="RFC 9773 certID: AKI.serial, base64url")
    status = models.CharField(max_length=10, choices=Status.choices)
    error = models.TextField(blank=True, help_text="Why the window could not be read, and whose side it is on.")
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    explanation_url = models.URLField(max_length=500, blank=True)
    # The window before the CA last moved it earlier (its sign that the certificate will be revoked).
    earlier_from_start = models.DateTimeField(null=True, blank=True)
    earlier_from_end = models.DateTimeField(null=True, blank=True)
    fetched_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "fingerprint"], name="one_renewal_info_per_cert")]
        ordering = ["-fetched_at"]

    def __str__(self):
        return f"ARI of {self.fingerprint[:12]} ({self.status})"


class WaitingAudit(models.Model):
    """A manual or API audit asked for beyond the organization's hourly limit ("Audit all" on a large
    portfolio): kept here, one per site, and started by the beat sweep as the hour frees up, or dropped
    when the site's own audit (nightly or another click) is queued first."""

    site = models.OneToOneField("sites.Site", on_delete=models.CASCADE, related_name="waiting_audit")
    organization = models.ForeignKey("orgs.Organization", on_delete=models.CASCADE, related_name="waiting_audits",
                                     db_index=False)   # waiting_audit_org_order leads with it
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    trigger = models.CharField(max_length=10, choices=[(Audit.Trigger.MANUAL, "Manual"), (Audit.Trigger.API, "API")],
                               default=Audit.Trigger.MANUAL)
    requested_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "requested_at", "id"], name="waiting_audit_org_order")]
        ordering = ["requested_at", "id"]

    def __str__(self):
        return f"Audit of site {self.site_id} waiting for a free slot"
