"""The one door out of the web process: every app sends work to the workers with `enqueue`, by task
name and ids, never by importing the Celery app, the tasks or the engines.

A message leaves once the transaction that created its row commits (a worker must find the row).
When the broker cannot take it (Redis down, unreachable, hung or out of memory), the caller's
`unsent` hook records that on the row and the one QueueUnavailable is raised to whoever committed:
the row exists, its message does not. The API answers 503 with the row (`queued: false`), the
pages say what happens to it (tlsaudit.core.unavailable).

For the reaper: `messages_lost` tells, once, that the broker lost what it held (a Redis restart
without persistence, a flush), and `queue_is_empty` whether messages wait for a task's queue.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable
from redis.exceptions import RedisError

from workers.celery import app

# What a client is told to wait before it looks again (the reaper sends within seconds of the broker's return).
RETRY_AFTER_SECONDS = 30
# Kombu wraps connection errors in its OperationalError; Redis' own errors (OOM, READONLY) and socket errors pass through.
BROKER_DOWN = (BrokerUnreachable, RedisError, OSError)
# A key in the broker's own database: if it is gone, so are the messages that were there with it.
KEPT_KEY = "tlsaudit:broker-kept-since"
log = logging.getLogger(__name__)


class QueueUnavailable(Exception):
    """The broker did not take a task message. `row`: the committed row whose work was not queued
    (when the sender said); `message`: what happens to it, in words for people."""

    def __init__(self, message: str, row=None):
        super().__init__(message)
        self.message, self.row = message, row


def enqueue(task_name: str, *ids, unsent: Callable[[], QueueUnavailable | None] | None = None, **options) -> None:
    """Send `task_name(*ids)` once the current transaction commits (at once outside one).

    If the broker cannot take it, `unsent()` records that on the row and returns the QueueUnavailable
    to raise to the code that committed (naming the row and what happens to it), or None when that
    code has nothing to do about it (the failure is logged either way). Options go to Celery's
    send_task (e.g. `link=[follow_up(...)]`).
    """
    transaction.on_commit(lambda: send(task_name, ids, unsent, options))


def send(task_name: str, ids: tuple, unsent, options: dict) -> None:
    try:
        # No result subscription: with ignore_result unset, send_task first subscribes to the Redis result
        # backend, which retried for 19 s and raised RuntimeError ("must be restarted") while Redis was down.
        app.send_task(task_name, args=list(ids), ignore_result=True, **options)
    except BROKER_DOWN as exc:
        log.warning("broker unavailable: %s%s not sent (%s: %s)", task_name, tuple(ids), type(exc).__name__, exc)
        refusal = unsent() if unsent else QueueUnavailable("The task queue is unavailable; nothing was queued.")
        if refusal is not None:
            raise refusal from exc


def follow_up(task_name: str, *ids) -> dict:
    """A task to run after another one succeeds (send_task's `link`), as the plain dict Celery reads."""
    return {"task": task_name, "args": list(ids), "kwargs": {}, "options": {}, "subtask_type": None,
            "immutable": True}


def messages_lost() -> bool:
    """True once after the broker lost every message it held (a Redis restart without persistence, a
    FLUSHALL, a new empty Redis): a key set here vanished with them. One SET NX per call. False when
    the broker cannot be asked, and for transports that do not lose messages that way (filesystem)."""
    with app.connection_for_write() as conn:
        try:
            conn.ensure_connection(max_retries=1, timeout=2)
            client = getattr(conn.default_channel, "client", None)
            if client is None:
                return False
            return bool(client.set(KEPT_KEY, timezone.now().isoformat(), nx=True))
        except (*BROKER_DOWN, *conn.connection_errors, *conn.channel_errors) as exc:
            log.warning("broker unavailable: cannot tell whether it lost messages (%s)", exc)
            return False


def broker_address() -> str:
    """Connect to the broker (one try, 2 s) and return its URL with the password masked; raises when it
    does not answer. For the health check: the web process reaches the broker through this module only."""
    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
        return conn.as_uri()


def queue_is_empty(task_name: str) -> bool:
    """No message waits in `task_name`'s queue (a queue that does not exist holds none). False when the
    broker cannot be asked: nothing could be sent then anyway."""
    queue = app.amqp.router.route({}, task_name)["queue"].name
    with app.connection_for_write() as conn:
        try:
            conn.ensure_connection(max_retries=1, timeout=2)
            return conn.default_channel.queue_declare(queue=queue, passive=True).message_count == 0
        except conn.channel_errors as exc:
            if str(getattr(exc, "reply_code", "")) == "404":  # NOT_FOUND: no such queue, so no message
                return True
            raise
        except (*BROKER_DOWN, *conn.connection_errors):
            return False


def resend_queued(rows, task_name: str) -> int:
    """Send `task_name(pk)` again for each row still queued (their messages were lost); a duplicate is
    harmless, every task claims its row with one atomic UPDATE. Stops at the first refusal."""
    sent = 0
    for pk in rows.values_list("pk", flat=True):
        try:
            enqueue(task_name, pk)
        except QueueUnavailable:
            break
        sent += 1
    return sent
