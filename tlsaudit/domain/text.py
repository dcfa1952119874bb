"""Names people type (organizations, sites, keys, tags, full names) are one line of plain text.

They end up in email subjects, CSV cells, log lines and HTML titles, where a line break or another
control character changes meaning (a CR/LF in a subject starts a new mail header). So names refuse
them at the door (`control_character`), and text that was stored before that rule existed is made
safe where it leaves (`single_line`).
"""

from __future__ import annotations

import unicodedata
from datetime import datetime

# Explicit bidirectional formatting: they reorder what is displayed ("Trojan Source" spoofing).
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Line and paragraph separators: str.splitlines() and many mail clients break lines on them.
LINE_SEPARATORS = frozenset("\u2028\u2029")


def is_control(char: str) -> bool:
    """C0, DEL and C1 controls (tab, CR, LF, NUL, NEL…), line separators and bidi overrides."""
    return unicodedata.category(char) == "Cc" or char in LINE_SEPARATORS or char in BIDI_CONTROLS


def control_character(text: str) -> tuple[int, str] | None:
    """(position, character) of the first control character in `text`, or None when there is none."""
    for position, char in enumerate(text):
        if is_control(char):
            return position, char
    return None


def describe(char: str) -> str:
    """'U+000D (carriage return)': how an error names a character that cannot be shown."""
    names = {"\t": "tab", "\n": "line feed", "\r": "carriage return", "\x00": "NUL"}
    name = names.get(char) or unicodedata.name(char, "control character").lower()
    return f"U+{ord(char):04X} ({name})"


def single_line(text: str, limit: int = 200) -> str:
    """`text` as one line of at most `limit` characters: every run of control characters and
    whitespace becomes one space, and a longer text is cut with an ellipsis."""
    words = "".join(" " if is_control(c) else c for c in str(text)).split()
    line = " ".join(words)
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def duration_words(seconds: float) -> str:
    """'0.4 s', '12 s', '2 min 5 s', '1 h 3 min': a run's length for a person (Django's timesince
    says '0 minutes' for anything under one)."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def days_until(expires: datetime | None, now: datetime) -> int | None:
    """Whole days left; negative once expired (-1 for a certificate that expired an hour ago)."""
    if expires is None:
        return None
    if expires >= now:
        return (expires - now).days
    return -max(1, (now - expires).days)


def expiry_words(days_left: int | None) -> str:
    """'12 days', 'expires today', 'expired 31 days ago': a negative count is never shown bare."""
    if days_left is None:
        return "–"
    if days_left < 0:
        ago = -days_left
        return f"expired {ago} day{'s' if ago != 1 else ''} ago"
    if days_left == 0:
        return "expires today"
    return f"{days_left} day{'s' if days_left != 1 else ''}"
