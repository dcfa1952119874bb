"""What an organization's custom CA may hold: its limits, shared by the dashboard's form, the API, the
model and the engines that load it (the browser probe builds an NSS store a certificate at a time)."""

from __future__ import annotations

MAX_CHARS = 200_000        # the PEM as stored: some hundred certificates
MAX_CERTIFICATES = 100     # an internal PKI has a few roots and intermediates, not thousands


def too_many(count: int) -> str | None:
    """Why `count` certificates are refused, in words, or None."""
    if count > MAX_CERTIFICATES:
        return (f"The custom CA holds {count:,} certificates; at most {MAX_CERTIFICATES} are accepted "
                "(your internal roots and intermediates, not a whole store).")
    return None


def too_long(chars: int) -> str | None:
    if chars > MAX_CHARS:
        return f"The custom CA is {chars:,} characters long; at most {MAX_CHARS:,} are accepted."
    return None
