"""Organizations that never opened their alert settings had nobody to email: their owners receive
alerts from now on (#30 item 8). An organization that saved its settings, even with no recipient,
keeps its choice."""

from django.db import migrations

MAX_RECIPIENTS = 20


def owners_receive_alerts(apps, schema_editor):
    Organization = apps.get_model("orgs", "Organization")
    AlertSettings = apps.get_model("alerts", "AlertSettings")
    Membership = apps.get_model("orgs", "Membership")
    for org in Organization.objects.filter(alert_settings__isnull=True).iterator():
        owners = Membership.objects.filter(organization=org, role="owner").order_by("pk")
        emails = list(dict.fromkeys(m.user.email for m in owners.select_related("user") if m.user.email))
        AlertSettings.objects.create(organization=org, recipients=emails[:MAX_RECIPIENTS])


class Migration(migrations.Migration):

    dependencies = [
        ("alerts", "0006_renewal_moved_kind"),
        ("orgs", "0002_org_name_one_line"),
    ]

    operations = [migrations.RunPython(owners_receive_alerts, migrations.RunPython.noop)]
