"""A broker restart must not stop a worker.

Celery 5.7's consumer, on losing Redis, first `collect()`s the broken connection (which detaches its
transport: `transport.client = None`) and then `close()`s it. When the first close of the channel did not
finish (its restore of unacknowledged messages cut by the collect's socket timeout, as under load), the
second one runs kombu 5.7's restore again, which asks the detached transport for the broker's URL
(`Channel._connparams`: `self.connection.client.hostname`) and raises AttributeError. Celery counts that as
unrecoverable and the worker exits: every scan process of a Redis restart did, in 2 of 2 runs, and under
the Procfile one exit stops the whole stack. Here that case raises redis's ConnectionError instead, which
the close path already ignores, so the consumer reconnects as it does from any broker outage. Messages it
could not restore stay in Redis's unacknowledged set until the visibility timeout; the audits behind them
do not wait for it: a running one is re-queued when its lease lapses, a held retry when it is a lease
overdue (tlsaudit.audits.services.orphan_held).
"""

from __future__ import annotations

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError

_connparams = kombu_redis.Channel._connparams


def connparams_of_a_live_transport(self, asynchronous=False):
    transport = self.connection
    if transport is None or transport.client is None:
        raise RedisConnectionError("the broker connection was already closed")
    return _connparams(self, asynchronous=asynchronous)


def install() -> None:
    kombu_redis.Channel._connparams = connparams_of_a_live_transport
