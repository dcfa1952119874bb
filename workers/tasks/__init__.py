"""Thin tasks: take ids, load the row, call an engine or a domain function, save, set status."""

from workers.tasks import audit, browser, housekeeping, load, ping  # noqa: F401  (register tasks with the app)
