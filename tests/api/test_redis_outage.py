"""A Redis cache that does not answer costs a request at most REDIS_CONNECT_TIMEOUT or
REDIS_SOCKET_TIMEOUT seconds, then its users fail open and log it: the API throttle and the
password-reset limits. Two real silent servers on 127.0.0.1: a "blackhole" (its accept queue is
held full, so the kernel drops our SYN, as with a dropped route) and a "tarpit" (TCP completes in
the kernel, nobody ever answers a command, as with a hung server). Before the timeouts existed, a
request waited for the kernel's connect timeout (~2 min) or for ever."""

import logging
import socket
import time

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db
# Far above the configured 1 s connect and 2 s command timeouts (two cache calls at most per
# request), far below the hang the timeouts prevent; a loaded CI machine stays within it.
NO_HANG_S = 12


@pytest.fixture(params=["blackhole", "tarpit"])
def silent_redis(request, settings):
    """Points the default cache, with the project's own OPTIONS, at a server that never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    filler = None
    if request.param == "blackhole":
        listener.listen(0)
        filler = socket.create_connection(("127.0.0.1", port))  # the queue is full: later SYNs are dropped
    else:
        listener.listen(64)
    assert settings.CACHES["default"]["OPTIONS"] == {"socket_connect_timeout": settings.REDIS_CONNECT_TIMEOUT,
                                                     "socket_timeout": settings.REDIS_SOCKET_TIMEOUT}
    settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": f"redis://127.0.0.1:{port}/0"}}
    yield request.param
    if filler is not None:
        filler.close()
    listener.close()


def test_the_api_serves_unthrottled_and_says_why_in_the_log(silent_redis, api, caplog):
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="tlsaudit.api.throttling"):
        response = api.get("/api/v1/sites/")
    elapsed = time.monotonic() - started

    assert response.status_code == 200, response.content[:300]
    assert "API throttle not checked: the cache is unavailable" in caplog.text
    assert elapsed < NO_HANG_S, f"{silent_redis}: {elapsed:.1f} s"


def test_a_password_reset_is_sent_when_its_limits_cannot_be_counted(silent_redis, client, alice, mailoutbox,
                                                                     caplog):
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="tlsaudit.core.ratelimits"):
        response = client.post(reverse("password_reset"), {"email": alice.email}, REMOTE_ADDR="203.0.113.9")
    elapsed = time.monotonic() - started

    assert response.status_code == 302
    assert len(mailoutbox) == 1
    assert "not checked: the cache is unavailable" in caplog.text
    assert elapsed < NO_HANG_S, f"{silent_redis}: {elapsed:.1f} s"
