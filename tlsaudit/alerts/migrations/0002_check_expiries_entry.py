"""The daily certificate-expiry check as a beat entry in the database (editable in the admin)."""

from django.db import migrations

NAME = "alerts: daily certificate expiry check"


def add_entry(apps, schema_editor):
    CrontabSchedule = apps.get_model("django_celery_beat", "CrontabSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    daily, _ = CrontabSchedule.objects.get_or_create(minute="17", hour="6", day_of_week="*", day_of_month="*",
                                                     month_of_year="*", timezone="UTC")
    PeriodicTask.objects.get_or_create(name=NAME, defaults={"task": "workers.tasks.alerts.check_expiries",
                                                            "crontab": daily})


def remove_entry(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [("alerts", "0001_initial"), ("django_celery_beat", "0019_alter_periodictasks_options")]
    operations = [migrations.RunPython(add_entry, remove_entry)]
