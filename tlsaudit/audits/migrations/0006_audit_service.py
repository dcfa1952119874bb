"""Audit.service: the TLS service audited (#18 item 3), for the API's compact audit object.

Existing rows take the service their stored facts name, else their site's."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery
from django.db.models.fields.json import KT


def backfill(apps, schema_editor):
    Audit = apps.get_model("audits", "Audit")
    Site = apps.get_model("sites", "Site")
    # The site's for every row (a queued or failed audit has no facts), then what the scan itself recorded.
    Audit.objects.update(service=Subquery(Site.objects.filter(pk=OuterRef("site_id")).values("service")[:1]))
    Audit.objects.filter(facts__has_key="service").update(service=KT("facts__service"))


class Migration(migrations.Migration):

    dependencies = [
        ('audits', '0005_audit_runner'),
        ('sites', '0007_site_service'),
    ]

    operations = [
        migrations.AddField(
            model_name='audit',
            name='service',
            field=models.CharField(choices=[('https', 'HTTPS'), ('smtp', 'SMTP (STARTTLS)'), ('smtps', 'SMTPS'), ('imap', 'IMAP (STARTTLS)'), ('imaps', 'IMAPS'), ('pop3', 'POP3 (STARTTLS)'), ('pop3s', 'POP3S'), ('ftp', 'FTP (AUTH TLS)'), ('xmpp', 'XMPP (STARTTLS)'), ('ldap', 'LDAP (STARTTLS)'), ('ldaps', 'LDAPS'), ('postgres', 'PostgreSQL (SSLRequest)')], default='https', max_length=10),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
