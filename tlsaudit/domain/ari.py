"""ACME Renewal Information (RFC 9773): which CA to ask, the certificate's id, the window's meaning. Pure.

A CA that runs ARI answers an unauthenticated GET of `<renewalInfo>/<certID>`, where `renewalInfo` is named
by its ACME directory and certID is base64url(authorityKeyIdentifier.keyIdentifier) "." base64url(the
serial number's DER content octets), with `{"suggestedWindow": {"start", "end"}, "explanationURL"?}`.
A window that moves earlier is how the CA tells its subscribers that the certificate will be revoked.
"""

from __future__ import annotations

import base64
import functools
import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

DATA = Path(__file__).with_name("data") / "ari_directories.json"
MAX_WINDOW_DAYS = 400        # longer than any certificate may live: a window beyond it is nonsense
EARLIEST, LATEST = datetime(2015, 1, 1, tzinfo=timezone.utc), datetime(2100, 1, 1, tzinfo=timezone.utc)
MIN_MOVE = timedelta(hours=1)   # a window end that drifts by less is no message from the CA
MAX_EXPLANATION_CHARS = 500


class BadRenewalInfo(ValueError):
    """The CA's answer is not a renewal window: the message says what was wrong."""


@dataclass(frozen=True)
class CaDirectory:
    name: str
    issuer_orgs: tuple[str, ...]
    directory: str


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime
    explanation_url: str = ""

    def moved_earlier_than(self, before: Window) -> bool:
        """The CA now wants the renewal sooner: its window ends earlier than it did (RFC 9773 §4.2), by more
        than a drift."""
        return before.end - self.end > MIN_MOVE


@functools.cache
def builtin_directories() -> tuple[CaDirectory, ...]:
    data = json.loads(DATA.read_text())
    return tuple(directory_from(entry) for entry in data["directories"])


def directory_from(entry: dict) -> CaDirectory:
    return CaDirectory(name=entry["name"], issuer_orgs=tuple(entry["issuer_orgs"]), directory=entry["directory"])


def directory_for(issuer_org: str, directories: list[CaDirectory]) -> CaDirectory | None:
    """The ACME server of the CA whose organization issued the certificate, or None."""
    wanted = issuer_org.strip().casefold()
    for entry in directories:
        if wanted and wanted in (org.casefold() for org in entry.issuer_orgs):
            return entry
    return None


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def serial_content_octets(serial: int) -> bytes:
    """A positive INTEGER's DER content: big-endian, minimal, a leading 0x00 when the top bit is set."""
    length = serial.bit_length() // 8 + 1
    return serial.to_bytes(length, "big", signed=True)


def cert_id(key_identifier: bytes, serial: int) -> str:
    return f"{b64url(key_identifier)}.{b64url(serial_content_octets(serial))}"


def parse_window(body: bytes | str) -> Window:
    """The suggested window of an ARI response; BadRenewalInfo says why one cannot be read."""
    try:
        data = json.loads(body)
        window = data["suggestedWindow"]
        start, end = parse_time(window["start"]), parse_time(window["end"])
    except (ValueError, KeyError, TypeError, RecursionError, OverflowError) as exc:
        raise BadRenewalInfo(f"not an ARI answer ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not (EARLIEST <= start <= LATEST and EARLIEST <= end <= LATEST):
        raise BadRenewalInfo(f"its window ({window['start']} to {window['end']}) is outside any certificate's life")
    if end <= start:
        raise BadRenewalInfo(f"its window ends ({window['end']}) before it starts ({window['start']})")
    if (end - start).days > MAX_WINDOW_DAYS:
        raise BadRenewalInfo(f"its window spans {(end - start).days} days")
    explanation = data.get("explanationURL") if isinstance(data, dict) else None
    usable = isinstance(explanation, str) and explanation.startswith("https://") and \
        len(explanation) <= MAX_EXPLANATION_CHARS
    return Window(start, end, explanation if usable else "")


def parse_time(text: str) -> datetime:
    """RFC 3339 with a zone (Go's ACME servers send nanoseconds: cut to microseconds)."""
    if not isinstance(text, str):
        raise ValueError("a time must be a string")
    head, dot, rest = text.partition(".")
    if dot:
        digits = "".join(c for c in rest if c.isdigit())
        zone = rest[len(digits):]
        text = f"{head}.{digits[:6]}{zone}"
    value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError(f"{text} has no time zone")
    return value.astimezone(timezone.utc)
