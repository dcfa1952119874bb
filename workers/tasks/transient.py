"""Failures a task should retry rather than die of: the service comes back in seconds."""

from django.db import InterfaceError, OperationalError

# PostgreSQL stopped or restarting (InterfaceError: a connection it already closed).
DATABASE_DOWN = (OperationalError, InterfaceError)
