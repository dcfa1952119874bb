"""Every new site gets a nightly schedule; a deleted schedule takes its beat entry with it."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django_celery_beat.models import PeriodicTask

from tlsaudit.monitoring.models import SiteSchedule
from tlsaudit.monitoring.schedules import delete_periodic_task, ensure_schedule
from tlsaudit.sites.models import Site


@receiver(post_save, sender=Site, dispatch_uid="monitoring.schedule_new_site")
def schedule_new_site(sender, instance, created, raw=False, **kwargs):
    if created and not raw:
        ensure_schedule(instance)


@receiver(post_delete, sender=SiteSchedule, dispatch_uid="monitoring.drop_beat_entry")
def drop_beat_entry(sender, instance, **kwargs):
    task = PeriodicTask.objects.filter(pk=instance.periodic_task_id).first()
    if task:
        delete_periodic_task(task)
