"""Celery app, thin tasks and the scan / load / browser engines."""
