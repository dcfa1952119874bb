"""Running the real migrations in a test: to a given state, and back to today's models."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def latest():
    """Every app at its newest migration: the models the code reads with."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def migrate(targets):
    """Migrate to `targets`; the historical apps registry of that state (for its models)."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps
