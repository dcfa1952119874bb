"""The beat sweep `start-waiting-audits`: audits waiting past their organization's hourly limit
(audits/waiting.py) start as the hour frees up, oldest first, through queue_audit and its limits."""

from __future__ import annotations

import logging

from django.db import DatabaseError, transaction

from tlsaudit.audits import waiting
from tlsaudit.audits.models import WaitingAudit
from tlsaudit.audits.services import AuditRateLimited, queue_audit
from tlsaudit.core.queue import QueueUnavailable
from tlsaudit.orgs.models import Organization
from tlsaudit.sites.models import Site

# Room for the ones passed over (a target over its own limit), bounded: a pass is one query and a few.
PASSED_OVER = 100
log = logging.getLogger(__name__)


def start_waiting() -> int:
    """The beat sweep: for each organization with audits in line, start as many as its hour has room
    for, oldest first; returns how many audits were queued. One organization's failure (a deadlock, the
    database going away) is logged and leaves the others their turn."""
    started = 0
    for organization_id in (WaitingAudit.objects.order_by().values_list("organization_id", flat=True).distinct()):
        try:
            started += start_for(organization_id)
        except DatabaseError:
            log.exception("waiting audits of organization %s: not started this pass", organization_id)
    return started


def start_for(organization_id: int) -> int:
    """Walk the organization's line oldest first until its hour is full. A site whose target is over its
    own limit (all organizations together, minutes) keeps its place and is passed over, so the sites
    behind it still start."""

    room = waiting.budget(organization_id).left
    started = 0
    line = list(WaitingAudit.objects.filter(organization_id=organization_id).order_by("requested_at", "id")
                .values_list("pk", "site_id")[:room * 4 + PASSED_OVER]) if room else []
    for pk, site_id in line:
        try:
            started += start_one(pk, site_id, organization_id)
        except AuditRateLimited as refusal:
            if refusal.code == "audits_per_org":
                break
        except QueueUnavailable:
            started += 1   # committed and marked unsent: the reaper sends it when the broker answers
        if started >= room:
            break
    return started


def start_one(pk: int, site_id: int, organization_id: int) -> int:
    """Queue one waiting audit and take it out of line, in one transaction, locking in queue_audit's order
    (site, organization, line) so that a click or a nightly run at the same moment waits instead of
    deadlocking; a second sweep skips a row the first holds."""
    with transaction.atomic():
        Site.objects.select_for_update().filter(pk=site_id).first()
        Organization.objects.select_for_update().filter(pk=organization_id).first()
        waiting = (WaitingAudit.objects.select_for_update(skip_locked=True, of=("self",))
                   .select_related("site", "requested_by").filter(pk=pk).first())
        if waiting is None:
            return 0   # started by another sweep, or queued another way, meanwhile
        _, created = queue_audit(waiting.site, user=waiting.requested_by, trigger=waiting.trigger, resolve=False)
        waiting.delete()
    return int(created)
