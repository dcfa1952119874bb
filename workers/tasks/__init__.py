"""Thin tasks: take ids, load the row, call an engine or a domain function, save, set status."""

from workers.tasks import alerts, audit, browser, digests, housekeeping, load, ping, reports, schedule  # noqa: F401  (register tasks with the app)
