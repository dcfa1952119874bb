"""Audits asked for beyond the organization's hourly limit, kept in line instead of refused.

"Audit all" on 3,000 sites used to queue 30 and refuse the rest in one red line. Now the rest wait here
(WaitingAudit, one per site) and the beat sweep `start-waiting-audits` (audits/sweep.py) starts them, oldest first, as the
hour frees up, under the same limits as a click (queue_audit). A site whose own audit is queued first (its
nightly run, another click) leaves the line then (queue_audit drops it). The budget is what the pages
and the API show before anyone presses the button.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from tlsaudit.audits.models import Audit, WaitingAudit
from tlsaudit.core.ratelimits import times_since
from tlsaudit.domain.ratelimit import in_words

HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class Budget:
    """An organization's on-demand audits: the hourly limit, what is left of it now, how many wait."""
    per_hour: int
    left: int
    waiting: int
    next_free_at: datetime | None   # when the next slot frees up, if none is left now

    @property
    def hours_to_clear(self) -> int:
        """Hours until the last waiting audit has started, at the limit's pace (nightly runs may be sooner)."""
        return math.ceil(max(self.waiting - self.left, 0) / self.per_hour)

    def explained(self) -> str:
        """Plain words for the page and the API, before anyone presses "Audit all"."""
        now = (f"{self.left} left this hour" if self.left else
               f"none left this hour, the next in {in_words(self.seconds_to_next_free())}")
        text = (f"Your organization starts at most {self.per_hour} audits an hour on demand (nightly audits do "
                f"not count): {now}.")
        if self.waiting:
            return f"{text} {waiting_words(self.waiting)} {self.wait_words()}"
        return (f"{text} Beyond that, audits wait in line and start as the hour frees up, or with the site's "
                "nightly audit if it has one and that comes first.")

    def wait_words(self, count: int | None = None) -> str:
        """What the `count` waiting audits (all of them by default) will do, after "N audits wait"."""
        count = self.waiting if count is None else count
        hours = self.hours_to_clear
        pace = f"the last in about {hours} hour{'s' if hours != 1 else ''}" if hours else "all within this hour"
        if count == 1:
            return (f"for a free slot: it starts as the hour frees up ({self.per_hour} an hour, {pace}), or with "
                    "its site's nightly audit if that comes first.")
        return (f"for a free slot: they start as the hour frees up ({self.per_hour} an hour, {pace}), or with "
                "their sites' nightly audits where those come first.")

    def seconds_to_next_free(self) -> int:
        if self.next_free_at is None:
            return 0
        return max(int((self.next_free_at - timezone.now()).total_seconds()) + 1, 1)


def waiting_words(count: int) -> str:
    return f"{count:,} audit{'s' if count != 1 else ''} {'wait' if count != 1 else 'waits'}"


def on_demand(organization_id: int):
    return Audit.objects.exclude(trigger=Audit.Trigger.SCHEDULE).filter(organization_id=organization_id)


def budget(organization_id: int) -> Budget:
    per_hour = settings.AUDIT_LIMIT_PER_ORG_HOUR
    started = sorted(times_since(on_demand(organization_id), HOUR))
    left = max(per_hour - len(started), 0)
    next_free = None if left or not started else started[len(started) - per_hour] + HOUR
    return Budget(per_hour=per_hour, left=left, next_free_at=next_free,
                  waiting=WaitingAudit.objects.filter(organization_id=organization_id).count())


def wait_for_slot(sites, *, user=None, trigger: str = Audit.Trigger.MANUAL) -> int:
    """Put the sites in line; returns how many were put there now (a site with an audit queued, running or
    already waiting is not put there again)."""
    sites, asked_at = list(sites), timezone.now()
    busy = set(Audit.objects.filter(site__in=sites, status__in=(Audit.Status.QUEUED, Audit.Status.RUNNING))
               .values_list("site_id", flat=True))
    busy |= set(WaitingAudit.objects.filter(site__in=sites).values_list("site_id", flat=True))
    rows = [WaitingAudit(site=site, organization_id=site.organization_id, trigger=trigger,
                         requested_by=user if user is not None and user.is_authenticated else None)
            for site in sites if site.pk not in busy]
    # ignore_conflicts: another request may have put the same site in line a moment ago (bulk_create then
    # still returns every row it was given, so count what is there).
    WaitingAudit.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    return WaitingAudit.objects.filter(site__in=[row.site for row in rows], requested_at__gte=asked_at).count()


def drop(site_id: int) -> None:
    """The site's audit was queued by another way: it no longer waits."""
    WaitingAudit.objects.filter(site_id=site_id).delete()


def cancel(organization_id: int) -> int:
    deleted, _ = WaitingAudit.objects.filter(organization_id=organization_id).delete()
    return deleted
