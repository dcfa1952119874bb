"""Issue 14: the proof's file is named by a public id and holds the secret (renamed from `token`),
and a proof records what it was made for. Proofs made under the old rule (a page that merely
*contained* the token, which was also in the URL we fetched) are withdrawn: we cannot tell a real
one from one an echoing server passed, so none stays trusted. The secret is kept, so a DNS record
that already equals the value passes again at the owner's next "Check now"."""

from django.db import migrations, models

import tlsaudit.loadtests.models

WITHDRAWN = ("TLS Audit changed its ownership proof: the file now has a new name and must hold only "
             "verification lines, and the DNS record must equal the value exactly. Proofs made before the "
             "change no longer count: serve the file shown on this page (or keep the DNS record), then press "
             "\"Check now\".")


def withdraw_and_name(apps, schema_editor):
    SiteVerification = apps.get_model("loadtests", "SiteVerification")
    rows = list(SiteVerification.objects.only("pk", "verified_at"))
    for row in rows:
        row.public_id = tlsaudit.loadtests.models.new_public_id()
        if row.verified_at is not None:
            row.verified_at, row.last_error = None, WITHDRAWN
    SiteVerification.objects.bulk_update(rows, ["public_id", "verified_at", "last_error"], batch_size=500)


class Migration(migrations.Migration):

    dependencies = [
        ("loadtests", "0002_results_lz4"),
    ]

    operations = [
        migrations.RenameField("siteverification", "token", "secret"),
        migrations.AlterField("siteverification", "secret", models.CharField(
            default=tlsaudit.loadtests.models.new_secret, editable=False, max_length=64)),
        migrations.AddField("siteverification", "public_id", models.CharField(
            editable=False, max_length=32, null=True)),
        migrations.AddField("siteverification", "proved_for", models.CharField(
            blank=True, default="", help_text="proof_subject(site) when it was proven", max_length=400)),
        migrations.RunPython(withdraw_and_name, migrations.RunPython.noop),
        migrations.AlterField("siteverification", "public_id", models.CharField(
            default=tlsaudit.loadtests.models.new_public_id, editable=False, max_length=32, unique=True)),
    ]
