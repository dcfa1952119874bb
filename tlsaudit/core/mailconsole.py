"""The console email backend of `make run`: each email as a framed block of its plain text.

Django's console backend prints the whole MIME message (headers, quoted-printable bodies that break
long links with `=` line ends, the HTML alternative): the verification link was hard to find and
to copy. This prints who, what and the text body, decoded, between rules that stand out in the
web and worker logs.
"""

from __future__ import annotations

from django.core.mail.backends.console import EmailBackend as DjangoConsoleBackend

RULE = "=" * 78


def framed(message) -> str:
    """One email as text: a rule, To/Subject, a thin rule, the plain body, a rule."""
    return "\n".join([RULE, f"EMAIL to {', '.join(message.to)}", f"Subject: {message.subject}", "-" * 78,
                      message.body.rstrip(), RULE, ""])


class EmailBackend(DjangoConsoleBackend):
    def send_messages(self, email_messages) -> int:
        if not email_messages:
            return 0
        with self._lock:
            for message in email_messages:
                self.stream.write(framed(message) + "\n")
            self.stream.flush()
        return len(email_messages)
