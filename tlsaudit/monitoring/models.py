"""Nightly/weekly audit schedules. Each enabled SiteSchedule is mirrored by one
django-celery-beat PeriodicTask (so beat reads it from the database and the admin can edit
it); a ScheduledRun row per (site, date) is the claim that makes a night run at most once."""

from django.db import models


class OrgSchedulePolicy(models.Model):
    """The hours (UTC, end excluded) in which an organization's scheduled audits may start."""

    organization = models.OneToOneField("orgs.Organization", on_delete=models.CASCADE,
                                        related_name="schedule_policy")
    window_start_hour = models.PositiveSmallIntegerField(default=1)
    window_end_hour = models.PositiveSmallIntegerField(default=5)

    class Meta:
        verbose_name_plural = "org schedule policies"

    def __str__(self):
        return f"{self.organization}: {self.window_start_hour:02d}:00-{self.window_end_hour:02d}:00 UTC"

    def hours(self) -> list[int]:
        """The window's hours; a window may wrap past midnight (22..3)."""
        span = (self.window_end_hour - self.window_start_hour) % 24 or 24
        return [(self.window_start_hour + i) % 24 for i in range(span)]


class SiteSchedule(models.Model):
    class Frequency(models.TextChoices):
        NIGHTLY = "nightly", "Nightly"
        WEEKLY = "weekly", "Weekly"
        OFF = "off", "Off"

    site = models.OneToOneField("sites.Site", on_delete=models.CASCADE, related_name="schedule")
    frequency = models.CharField(max_length=8, choices=Frequency.choices, default=Frequency.NIGHTLY)
    hour = models.PositiveSmallIntegerField()
    minute = models.PositiveSmallIntegerField()
    weekday = models.PositiveSmallIntegerField(default=1, help_text="For weekly runs: 0 = Sunday … 6 = Saturday (cron).")
    periodic_task = models.OneToOneField("django_celery_beat.PeriodicTask", null=True, blank=True,
                                         on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"{self.site}: {self.get_frequency_display()} at {self.hour:02d}:{self.minute:02d} UTC"

    @property
    def enabled(self) -> bool:
        return self.frequency != self.Frequency.OFF


class ScheduledRun(models.Model):
    """The claim of one scheduled run: inserting it is the one atomic step that owns the night."""

    site = models.ForeignKey("sites.Site", on_delete=models.CASCADE, related_name="scheduled_runs")
    run_date = models.DateField()
    audit = models.ForeignKey("audits.Audit", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    caught_up = models.BooleanField(default=False, help_text="Queued by the catch-up sweep, not by beat.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "run_date"], name="one_scheduled_run_per_site_and_date")]
        ordering = ["-run_date"]

    def __str__(self):
        return f"{self.site} on {self.run_date}"
