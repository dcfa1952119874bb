"""A Redis channel closed after its connection was collected (celery's consumer does both when Redis goes
away) ends quietly instead of stopping the worker with an AttributeError (#35, workers/brokerfix.py)."""

import uuid

import pytest
from django.conf import settings
from kombu import Connection, Exchange, Queue
from kombu.transport import redis as kombu_redis

from workers import brokerfix


@pytest.fixture
def delivered():
    """A connection whose channel holds one delivered, unacknowledged message, on the real Redis."""
    name = f"brokerfix-{uuid.uuid4().hex[:8]}"
    conn = Connection(settings.CELERY_BROKER_URL)
    queue = Queue(name, Exchange(name), name, channel=conn.default_channel)
    queue.declare()
    conn.Producer().publish({"audit": 1}, exchange=name, routing_key=name, declare=[queue])
    messages = []
    conn.Consumer([queue], callbacks=[lambda body, message: messages.append(message)]).consume()
    conn.drain_events(timeout=5)
    assert len(messages) == 1
    conn.delivery_tag = messages[0].delivery_tag
    yield conn
    with Connection(settings.CELERY_BROKER_URL) as cleanup:
        queue(cleanup.default_channel).delete()
    kept().hdel("unacked", conn.delivery_tag)
    kept().zrem("unacked_index", conn.delivery_tag)


def kept():
    import redis

    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def collected_without_closing_its_channel(conn):
    """What the consumer's collect() leaves when its own close of the channel was cut short: the transport
    detached (client None), the channel and its unacknowledged message still there, its pool dropped."""
    conn.default_channel._pool = None
    conn._do_close_transport()


def test_kombus_own_close_of_such_a_channel_raises_what_celery_calls_unrecoverable(delivered, monkeypatch):
    monkeypatch.setattr(kombu_redis.Channel, "_connparams", brokerfix._connparams)
    collected_without_closing_its_channel(delivered)
    with pytest.raises(AttributeError, match="hostname"):
        delivered.close()


def test_with_the_fix_the_close_ends_quietly_so_the_consumer_reconnects(delivered):
    assert kombu_redis.Channel._connparams is brokerfix.connparams_of_a_live_transport   # installed by workers.celery
    collected_without_closing_its_channel(delivered)
    delivered.close()
    # nothing lost: Redis keeps the message among the unacknowledged ones (restored after the visibility
    # timeout; the audit behind it is resent sooner by the reaper)
    assert kept().hexists("unacked", delivered.delivery_tag)
