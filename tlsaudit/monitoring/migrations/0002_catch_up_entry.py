"""The catch-up sweep as a beat entry in the database (editable in the admin), every 15 minutes."""

from django.db import migrations

NAME = "catch up missed scheduled audits"


def add_entry(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    every, _ = IntervalSchedule.objects.get_or_create(every=15, period="minutes")
    PeriodicTask.objects.get_or_create(name=NAME, defaults={"task": "workers.tasks.schedule.catch_up",
                                                            "interval": every})


def remove_entry(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [("monitoring", "0001_initial"), ("django_celery_beat", "0019_alter_periodictasks_options")]
    operations = [migrations.RunPython(add_entry, remove_entry)]
