"""A deleted schedule takes its beat entry with it: a site's deletion cascades to its schedule in the
database, where no model code runs, so this is a receiver (tests/test_layering.py's allow-list). A new
site's schedule is made by the service that adds sites (tlsaudit/sites/services.py), not here."""

from django.db.models.signals import post_delete
from django.dispatch import receiver
from django_celery_beat.models import PeriodicTask

from tlsaudit.monitoring.models import SiteSchedule
from tlsaudit.monitoring.schedules import delete_periodic_task


@receiver(post_delete, sender=SiteSchedule, dispatch_uid="monitoring.drop_beat_entry")
def drop_beat_entry(sender, instance, **kwargs):
    task = PeriodicTask.objects.filter(pk=instance.periodic_task_id).first()
    if task:
        delete_periodic_task(task)
