from django.conf import settings
from django.db import models

from tlsaudit.api import keys
from tlsaudit.core.validators import no_control_characters


class ApiKey(models.Model):
    """An organization's key. The plaintext is shown once at creation; only its hash is kept."""

    class Scope(models.TextChoices):
        READ_WRITE = keys.READ_WRITE, "Read-write"
        READ_ONLY = keys.READ_ONLY, "Read-only"

    organization = models.ForeignKey("orgs.Organization", on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=80, validators=[no_control_characters])
    scope = models.CharField(max_length=2, choices=Scope.choices, default=Scope.READ_ONLY)
    lookup = models.CharField(max_length=10, unique=True)
    digest = models.CharField(max_length=64)
    # Requests per minute for this key; null means the site-wide API_THROTTLE_RATE.
    rate_per_minute = models.PositiveIntegerField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.name} ({self.display_prefix}…)"

    @property
    def display_prefix(self) -> str:
        return f"{keys.PREFIXES[self.scope]}{self.lookup}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def read_only(self) -> bool:
        return self.scope == self.Scope.READ_ONLY


class IdempotencyRecord(models.Model):
    """The first response to a POST carrying an `Idempotency-Key`, replayed for 24 h to retries.

    While its request runs the record is pending (status_code 0) and leased until `leased_until`;
    a retry after that takes it over (its holder died) and bumps `attempt`, which fences the
    writes of every earlier holder."""

    organization = models.ForeignKey("orgs.Organization", on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=120)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of method, path and body")
    status_code = models.PositiveSmallIntegerField()
    body = models.JSONField(null=True)
    location = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    attempt = models.PositiveIntegerField(default=1)
    leased_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "key"], name="unique_idempotency_key")]
