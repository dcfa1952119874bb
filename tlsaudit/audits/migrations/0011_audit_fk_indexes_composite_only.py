"""The audits' single-column indexes on organization and site go (#36): the composite indexes lead with the
same columns, and PostgreSQL chose the single-column one and sorted a whole history for a page.

Dropped CONCURRENTLY, outside a transaction: Django's AlterField(db_index=False) on a foreign key drops and
re-adds the constraint (a check of every audit row) while holding ACCESS EXCLUSIVE on the table for the
whole migration. The model state changes alone; the database loses only the two indexes, without blocking
reads or writes."""

import django.db.models.deletion
from django.db import migrations, models

# Django's names for the foreign keys' indexes (schema_editor._create_index_name of each column).
INDEXES = {"audits_audit_organization_id_df13509d": "organization_id", "audits_audit_site_id_aa7e247d": "site_id"}


def drop_indexes(apps, schema_editor):
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""  # SQLite: make run
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX {concurrently}IF EXISTS {name}")


def create_indexes(apps, schema_editor):
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    for name, column in INDEXES.items():
        schema_editor.execute(f"CREATE INDEX {concurrently}IF NOT EXISTS {name} ON audits_audit ({column})")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('audits', '0010_waiting_audits'),
        ('orgs', '0003_custom_ca_limits'),
        ('sites', '0009_cert_renew_at_help'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='audit',
                    name='organization',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name='audits', to='orgs.organization'),
                ),
                migrations.AlterField(
                    model_name='audit',
                    name='site',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name='audits', to='sites.site'),
                ),
            ],
            database_operations=[migrations.RunPython(drop_indexes, create_indexes)],
        ),
    ]
