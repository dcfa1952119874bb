"""Alerts: who hears about what (AlertSettings), what happened once (AlertEvent, unique per
occurrence), and where it is pushed (Webhook) with every delivery attempt logged."""

import secrets
from urllib.parse import urlsplit

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse

from tlsaudit.domain import alerts as rules

SECRET_PREFIX = "whsec_"


def default_kinds() -> list[str]:
    return list(rules.KINDS)


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


class AlertSettings(models.Model):
    organization = models.OneToOneField("orgs.Organization", on_delete=models.CASCADE, related_name="alert_settings")
    recipients = models.JSONField(default=list, blank=True, help_text="Email addresses, at most 20.")
    kinds = models.JSONField(default=default_kinds, blank=True, help_text="Event kinds that notify.")
    renewal_share_pct = models.PositiveSmallIntegerField(
        "Renewal overdue after (% of lifetime)", default=rules.RENEWAL_SHARE_PCT,
        validators=[MinValueValidator(50), MaxValueValidator(95)],
        help_text="Alert when a certificate has used this share of its lifetime and is still served "
                  "(67: certbot's renewal point, one third left; a day's grace, less for short lives).")
    backstop_days = models.PositiveSmallIntegerField(
        "Backstop (days left)", default=rules.BACKSTOP_DAYS, validators=[MaxValueValidator(60)],
        help_text=f"Also alert this many days before expiry, for certificates longer than "
                  f"{rules.BACKSTOP_MIN_LIFETIME_DAYS} days; 0 turns it off.")

    class Meta:
        verbose_name_plural = "alert settings"

    def expiry_policy(self) -> rules.ExpiryPolicy:
        return rules.ExpiryPolicy(renewal_share=self.renewal_share_pct / 100, backstop_days=self.backstop_days)

    def __str__(self):
        return f"Alert settings of {self.organization}"

    def wants(self, kind: str) -> bool:
        return kind in self.kinds


class AlertEvent(models.Model):
    organization = models.ForeignKey("orgs.Organization", on_delete=models.CASCADE, related_name="alert_events")
    site = models.ForeignKey("sites.Site", on_delete=models.CASCADE, related_name="alert_events")
    audit = models.ForeignKey("audits.Audit", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    kind = models.CharField(max_length=30, choices=rules.KIND_CHOICES, db_index=True)
    dedupe_key = models.CharField(max_length=255)
    title = models.CharField(max_length=300)
    payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set once the event's email step is over: sent, nobody to send to, or given up (email_error says why).
    emailed_at = models.DateTimeField(null=True, blank=True)
    # Why the last attempt to email it failed; empty once it went out. With emailed_at unset, it is retried.
    email_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["organization", "dedupe_key"], name="one_alert_per_occurrence")]
        # The alerts page lists an organization's newest events (a year of them: thousands).
        indexes = [models.Index(fields=["organization", "-created_at"], name="alertevent_org_recent")]

    def __str__(self):
        return f"{self.site}: {self.title}"


class Webhook(models.Model):
    organization = models.ForeignKey("orgs.Organization", on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    # Kept as given: the receiver checks our HMAC with the same secret. Shown once, then its last 4.
    secret = models.CharField(max_length=80, default=new_secret)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self):
        return self.url

    @property
    def secret_hint(self) -> str:
        return f"{SECRET_PREFIX}…{self.secret[-4:]}"

    @property
    def origin(self) -> str:
        """Scheme, host and port only: webhook paths often embed a token (Slack, Teams), so logs and
        viewers get this."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"

    @property
    def origin_only(self) -> str:
        """The URL as shown to those who may not see it whole."""
        return f"{self.origin}/…"


class WebhookDelivery(models.Model):
    """One POST attempt. Attempt 1 is created pending when queued; retries add rows."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        OK = "ok", "Delivered"
        FAILED = "failed", "Failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(AlertEvent, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries",
                              help_text="Empty for a test delivery.")
    first = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="retries",
                              help_text="The first attempt, for retries.")
    attempt = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # On a failed attempt with retries left: when the beat's sweep sends the next one (then a lease while
    # that one is in the queue, so a lost message is sent again); cleared once the next attempt runs.
    next_attempt_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # Set by the task that sends this attempt (services.claim_attempt), so a second message for it does not.
    claimed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-attempt"]
        constraints = [models.UniqueConstraint(fields=["first", "attempt"], name="one_row_per_attempt")]

    def __str__(self):
        return f"{self.webhook} #{self.attempt} {self.status}"

    @property
    def kind(self) -> str:
        return self.event.kind if self.event_id else "test"

    def get_absolute_url(self):
        return reverse("alerts:settings", args=[self.webhook.organization.slug])  # where the delivery log is
