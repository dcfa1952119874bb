from django.db import models
from django.utils import timezone


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
