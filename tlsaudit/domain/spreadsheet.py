"""What a CSV cell may hold so that a spreadsheet shows it instead of running it (CSV injection).

Excel, LibreOffice and Google Sheets evaluate a cell that starts with `=`, `+`, `-` or `@` (and,
after stripping them, with a leading tab, CR or spaces); `=cmd|' /C calc'!A0` runs a program
through DDE. Our cells carry text from outside: site and organization names, and headers of the
servers we test. `cell_text` turns every value into the text written:

1. a plain number (optional sign, digits, fraction, exponent, optional %) is written as it is, so
   -12.5 stays a negative number: nothing in it can call a function or reference another cell;
2. text whose first character, or first after leading whitespace and invisible characters, is a
   formula trigger (= + - @ | %, their fullwidth forms), or that starts with a tab, CR or LF, gets
   a leading apostrophe (spreadsheets show the rest as text and hide the apostrophe), and its `|`
   become `\\|` so that a DDE call stays broken even if the apostrophe is lost on a re-save;
3. any other text is written as it is (a `|` in the middle of a name runs nothing).
"""

from __future__ import annotations

import re
import unicodedata

NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?%?")
TRIGGERS = frozenset("=+-@|%\uff1d\uff0b\uff0d\uff20")  # and ＝ ＋ － ＠, which some IMEs turn into = + - @
LEADING_RISKY = ("\t", "\r", "\n")


def cell_text(value) -> str:
    if value is None:
        return ""
    text = str(value)
    if NUMBER.fullmatch(text) or not looks_like_formula(text):
        return text
    return "'" + text.replace("|", "\\|")


def looks_like_formula(text: str) -> bool:
    return text.startswith(LEADING_RISKY) or first_visible(text) in TRIGGERS


def first_visible(text: str) -> str:
    """The first character that is not whitespace, a control or an invisible format character
    (zero-width space, BOM, bidi marks): spreadsheets skip or trim those before deciding."""
    for char in text:
        if not (char.isspace() or unicodedata.category(char) in ("Cc", "Cf")):
            return char
    return ""
