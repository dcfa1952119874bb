"""Outages answered in words: a friendly 503 while the database is down, instead of a traceback or a
bare 500; and, on pages, what happens to work the task queue did not take (QueueUnavailableMiddleware).

PostgreSQL restarting or unreachable raises OperationalError (or InterfaceError on a connection it
already closed) wherever the request first touches the database: in a view, in a template's context
processor, or in a middleware (the session, the user). Views' errors arrive in `process_exception`;
errors of the middleware inside this one were already turned into a 500 by Django, which tells
`got_request_exception` first, so we mark the request there and swap the 500 for the 503 on the way out.
The page renders without the database: no request context, no user, no base.html.
"""

import logging
import sys

from django.contrib import messages
from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError
from django.dispatch import receiver
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string

from tlsaudit.core.queue import RETRY_AFTER_SECONDS as QUEUE_RETRY_AFTER_SECONDS
from tlsaudit.core.queue import QueueUnavailable

DATABASE_DOWN = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 30
MESSAGE = "The database is unavailable (usually a restart); nothing was lost. Please retry in a moment."
log = logging.getLogger(__name__)


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if getattr(request, "_database_down", False) and response.status_code == 500:
            return unavailable_response(request)
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, DATABASE_DOWN):
            log_outage(request, exception)
            return unavailable_response(request)
        return None


@receiver(got_request_exception)
def mark_database_down(sender, request=None, **kwargs):
    exception = sys.exc_info()[1]
    if request is not None and isinstance(exception, DATABASE_DOWN):
        log_outage(request, exception)
        request._database_down = True


def log_outage(request, exception) -> None:
    # One line, not a traceback per request: during an outage every request fails the same way.
    log.error("database unavailable for %s %s: %s", request.method, request.path, exception)


def unavailable_response(request) -> HttpResponse:
    if request.path.startswith("/api/"):
        response = JsonResponse({"error": {"code": "unavailable", "message": MESSAGE, "fields": {}}}, status=503)
    else:
        html = render_to_string("503.html", {"retry_after": RETRY_AFTER_SECONDS})
        response = HttpResponse(html, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


class QueueUnavailableMiddleware:
    """A page that started work while the broker was down shows that work's page (its row exists) with
    what happens to it: an audit starts once the queue is back, a load run or probe failed and says so.
    The API answers 503 instead (tlsaudit.api.errors)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, QueueUnavailable) or request.path.startswith("/api/"):
            return None
        if exception.row is not None and hasattr(exception.row, "get_absolute_url"):
            messages.warning(request, exception.message)
            return redirect(exception.row)
        response = HttpResponse(exception.message, content_type="text/plain; charset=utf-8", status=503)
        response["Retry-After"] = str(QUEUE_RETRY_AFTER_SECONDS)
        return response
