"""API key format, pure: `tlaw_<id>_<secret>` (read-write) or `tlar_<id>_<secret>` (read-only).

The prefix makes a leaked key recognisable (secret scanners, logs) and tells its scope at a
glance; the id is the indexed lookup part; only a SHA-256 of the whole key is stored. Keys carry
240 bits of randomness, so a fast hash is enough: nobody brute-forces them (a slow KDF would only
slow every API request down).
"""

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

READ_WRITE, READ_ONLY = "rw", "ro"
PREFIXES = {READ_WRITE: "tlaw_", READ_ONLY: "tlar_"}
KEY_RE = re.compile(r"^(tlaw|tlar)_([A-Za-z0-9]{10})_([A-Za-z0-9_-]{40})$")


@dataclass(frozen=True)
class NewKey:
    plaintext: str   # shown once, never stored
    lookup: str
    digest: str


def generate(scope: str) -> NewKey:
    lookup = secrets.token_hex(5)
    secret = secrets.token_urlsafe(30)
    plaintext = f"{PREFIXES[scope]}{lookup}_{secret}"
    return NewKey(plaintext, lookup, digest_of(plaintext))


def digest_of(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def parse(plaintext: str) -> tuple[str, str] | None:
    """(scope, lookup) of a well-formed key, else None."""
    match = KEY_RE.match(plaintext)
    if not match:
        return None
    scope = READ_WRITE if match.group(1) == "tlaw" else READ_ONLY
    return scope, match.group(2)


def matches(plaintext: str, digest: str) -> bool:
    return hmac.compare_digest(digest_of(plaintext), digest)
