from django.conf import settings
from django.db import models
from django.utils import timezone

from tlsaudit.core.actions import action_label


class WorkerHeartbeat(models.Model):
    """Last time a worker ran a liveness task; /healthz reads it (works on every broker)."""

    name = models.CharField(max_length=64, unique=True)
    seen_at = models.DateTimeField()
    count = models.PositiveBigIntegerField(default=0)

    def __str__(self):
        return f"{self.name} @ {self.seen_at:%Y-%m-%d %H:%M:%S}"

    @classmethod
    def record(cls, name: str) -> None:
        updated = cls.objects.filter(name=name).update(seen_at=timezone.now(), count=models.F("count") + 1)
        if not updated:
            cls.objects.get_or_create(name=name, defaults={"seen_at": timezone.now(), "count": 1})


class AuditLogEntry(models.Model):
    """One security-relevant action (login, key revoked, role changed…); written by core.auditlog.record.

    Rows outlive what they describe: `target` is a text description and the foreign keys are
    SET_NULL, so deleting a site or a user keeps the trail of who deleted what.
    """

    # SET_NULL: deleting an organization keeps its trail for the operators (Django admin).
    organization = models.ForeignKey("orgs.Organization", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="audit_log")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    # Kept beside the FK so the entry still names the person after their account is deleted.
    actor_email = models.CharField(max_length=254, blank=True)
    action = models.CharField(max_length=64, db_index=True)
    target = models.CharField(max_length=255, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["organization", "-created_at"], name="auditlog_org_recent")]
        verbose_name_plural = "audit log entries"

    def __str__(self):
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.action} by {self.actor_email or 'anonymous'}"

    @property
    def label(self) -> str:
        return action_label(self.action)

    @property
    def detail_items(self) -> list[tuple[str, str]]:
        """`detail` for people: lists joined with commas, booleans as yes/no."""
        def show(value):
            if isinstance(value, list):
                return ", ".join(map(str, value))
            if isinstance(value, bool):
                return "yes" if value else "no"
            return str(value)
        return [(key.replace("_", " "), show(value)) for key, value in self.detail.items()]
