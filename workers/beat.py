"""Beat's scheduler: django-celery-beat's DatabaseScheduler, made to survive a row vanishing.

`PeriodicTask.objects.enabled()` reads the tasks, then their schedules in a second query
(prefetch_related). A site deleted, or its nightly audits turned off, between the two leaves a
task whose schedule is gone: upstream then raises AttributeError ('NoneType' object has no
attribute 'schedule') out of `all_as_schedule`, and beat exits. Seen in our fault tests while 50
sites were created and their schedules switched off during beat's start. Here such an entry is
skipped (the task no longer exists; the next sync reads the table again) and beat runs on.
"""

from __future__ import annotations

import logging

from django.core.exceptions import ObjectDoesNotExist
from django_celery_beat.schedulers import DatabaseScheduler

logger = logging.getLogger(__name__)


class RobustDatabaseScheduler(DatabaseScheduler):
    def all_as_schedule(self) -> dict:
        entries = {}
        for model in self.enabled_models():
            try:
                if model.scheduler is None:
                    logger.info("beat: skipping %r: its schedule was deleted while beat read it", model.name)
                    continue
                entries[model.name] = self.Entry(model, app=self.app)
            except ObjectDoesNotExist:
                logger.info("beat: skipping %r: deleted while beat read it", model.name)
            except ValueError:
                pass  # as upstream: an entry that cannot be built (e.g. a bad crontab) is left out
        return entries
