"""A real SMTP server (aiosmtpd) on 127.0.0.1 that refuses every recipient with 550, for tests of
mail failures: Django's SMTP backend talks to it as to any server and a send raises
SMTPRecipientsRefused. The accepting twin is `smtp_server` in tests/fixtures/receivers.py.

    with refusing_smtp() as (port, server):
        use_smtp(settings, port)
        ...
    assert server.refused == ["dave@example.test"]
"""

from __future__ import annotations

from contextlib import contextmanager

from tests.support.daemons import free_port


class RefusingServer:
    """aiosmtpd handler: answers every RCPT TO with 550 and keeps the addresses it refused."""

    def __init__(self):
        self.refused = []

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        self.refused.append(address)
        return "550 5.1.1 No such mailbox here"


@contextmanager
def refusing_smtp():
    from aiosmtpd.controller import Controller

    handler = RefusingServer()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield controller.port, handler
    finally:
        controller.stop()


def use_smtp(settings, port: int) -> None:
    """Point Django's SMTP backend at 127.0.0.1:`port` (the `settings` fixture restores it)."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_TIMEOUT = 5
