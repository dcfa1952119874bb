"""Thin tasks: take ids, load the row, call an engine or a domain function, save, set status."""

from workers.tasks import (  # noqa: F401  (register tasks with the app)
    alerts,
    audit,
    browser,
    digests,
    housekeeping,
    load,
    ping,
    reports,
    schedule,
)
