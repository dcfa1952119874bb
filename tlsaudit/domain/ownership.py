"""Ownership proofs, judged: what a verification file or a DNS TXT record must hold. Pure.

The owner publishes one line, `tlsaudit-verification=<secret>`. The secret is in nothing we send
(the file's URL names a separate public id), and '=' can be neither in a host name nor in the path
we ask for, so nothing a server echoes back from our request can ever equal that line.

- The file must hold only verification lines (one per organization that proves the host), and one
  of them must equal the value. Tolerated: a UTF-8 byte order mark, CRLF line ends, spaces and tabs
  around a line, blank lines. A page (HTML, a soft-404, a search result) has other lines: refused.
- A TXT record must equal the value, its character-strings joined (how long TXT values are split);
  several records may sit on the name, one per organization, beside SPF and the like.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

PREFIX = "tlsaudit-verification="
_LINE = re.compile(r"tlsaudit-verification=[A-Za-z0-9_-]{16,128}")
_AROUND = " \t\r"           # what may surround a line or a record (not every Unicode space)
_EXCERPT = 60


@dataclass(frozen=True)
class Verdict:
    ok: bool
    why: str                # what we found, in the site owner's words


def proof_value(secret: str) -> str:
    return PREFIX + secret


def judge_file(body: bytes, value: str) -> Verdict:
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        return Verdict(False, f"its content is not UTF-8 text: it must hold the line {value}.")
    lines = [line.strip(_AROUND) for line in text.split("\n")]
    for number, line in enumerate(lines, 1):
        if line and not _LINE.fullmatch(line):
            return Verdict(False, f"line {number} is not a verification line ({excerpt(line)}): the file must hold "
                                  f"only lines like {value}, one per organization, and nothing else.")
    found = [line for line in lines if line]
    if not found:
        return Verdict(False, f"the file is empty: it must hold the line {value}.")
    if value in found:
        return Verdict(True, "the file holds this site's verification line.")
    return Verdict(False, f"it holds {len(found)} verification line(s), but none of them is this site's: {value}.")


def judge_txt(records: Sequence[Sequence[bytes]], value: str) -> Verdict:
    """`records`: each TXT record as its character-strings."""
    texts = [b"".join(strings).decode("utf-8", "replace").strip(_AROUND) for strings in records]
    if value in texts:
        return Verdict(True, "a TXT record equals this site's value.")
    shown = "; ".join(excerpt(text) for text in texts)
    return Verdict(False, f"its TXT records ({shown}) do not include one that is exactly {value}.")


def excerpt(text: str) -> str:
    """A short, printable quote of what a server sent (it lands in a message on our page)."""
    cut = text[:_EXCERPT] + ("…" if len(text) > _EXCERPT else "")
    return repr(cut)
