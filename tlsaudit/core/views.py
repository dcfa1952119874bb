import hmac
import time

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from tlsaudit.core import auditlog
from tlsaudit.core.actions import ACTIONS
from tlsaudit.core.models import WorkerHeartbeat
from tlsaudit.core.queue import broker_address
from tlsaudit.core.unavailable import DATABASE_DOWN
from tlsaudit.core.unavailable import RETRY_AFTER_SECONDS as OUTAGE_RETRY_AFTER_SECONDS
from tlsaudit.orgs.access import org_for, orgs_of

AUDIT_LOG_PAGE_SIZE = 50


def home(request):
    """Send the user where their work is: their last organization, or onboarding."""
    if not request.user.is_authenticated:
        return render(request, "core/landing.html")
    orgs = list(orgs_of(request.user))
    if not orgs:
        return render(request, "core/welcome.html")
    current = next((o for o in orgs if o.pk == request.user.last_org_id), orgs[0])
    return redirect("sites:list", current.slug)


def healthz(request):
    """Status as JSON; 503 when the database or broker is down. Anonymous callers (load balancers,
    docker's healthcheck) get only the status: the checks' details name the database engine, the
    broker's URL and the workers' state, which help an attacker. A staff login or the
    HEALTHZ_TOKEN (`Authorization: Bearer …`) sees them."""
    database = _check_database()
    # Heartbeats live in the database: with it down, say so rather than fail the whole answer.
    worker = _check_worker() if database["ok"] else {"ok": False, "detail": "unknown: the database is down"}
    checks = {"database": database, "broker": _check_broker(), "worker": worker}
    healthy = checks["database"]["ok"] and checks["broker"]["ok"]
    status = "ok" if healthy and checks["worker"]["ok"] else ("degraded" if healthy else "down")
    body = {"status": status, "checks": checks} if may_see_health_details(request) else {"status": status}
    response = JsonResponse(body, status=200 if healthy else 503)
    response["Cache-Control"] = "no-store"
    if not healthy:   # as the API's 503s: when a retry may find the database or broker back
        response["Retry-After"] = str(OUTAGE_RETRY_AFTER_SECONDS)
    return response


def may_see_health_details(request) -> bool:
    return has_health_token(request) or is_staff(request)


def has_health_token(request) -> bool:
    expected = settings.HEALTHZ_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    # compare_digest: the time taken does not tell how much of a guess was right.
    return bool(expected) and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(),
                                                                                  expected.encode())


def is_staff(request) -> bool:
    try:
        return request.user.is_authenticated and request.user.is_staff
    except DATABASE_DOWN:
        return False  # the session cannot be read while the database is down: answer as to anyone


def _timed(fn):
    started = time.perf_counter()
    try:
        detail = fn()
        ok = True
    except Exception as exc:  # noqa: BLE001 — any failure is a health result, not a crash
        detail, ok = f"{type(exc).__name__}: {exc}", False
    return {"ok": ok, "detail": detail, "ms": round((time.perf_counter() - started) * 1000, 1)}


def _check_database():
    def run():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return connection.vendor
    return _timed(run)


def _check_broker():
    return _timed(broker_address)


def _check_worker():
    beat = WorkerHeartbeat.objects.filter(name="heartbeat").first()
    if beat is None:
        return {"ok": False, "detail": "no worker heartbeat recorded yet (is the worker and beat running?)"}
    age = (timezone.now() - beat.seen_at).total_seconds()
    ok = age <= 3 * settings.WORKER_HEARTBEAT_SECONDS
    return {"ok": ok, "detail": f"last heartbeat {age:.0f} s ago", "last_seen": beat.seen_at.isoformat()}


@login_required
def audit_log(request, org):
    """The organization's security audit log, for owners: newest first, filtered by action."""
    org = org_for(request, org, "view_audit_log")
    action = request.GET.get("action", "").strip()
    error = ""
    if action and action not in ACTIONS:
        error, action = f"There is no action called {action[:64]!r}: choose one from the list.", ""
    page = Paginator(auditlog.entries_for(org, action).select_related("organization"),
                     AUDIT_LOG_PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"org": org, "page": page, "action": action, "error": error,
               "actions": sorted(ACTIONS.items(), key=lambda item: item[1])}
    return render(request, "core/audit_log.html", context, status=400 if error else 200)
