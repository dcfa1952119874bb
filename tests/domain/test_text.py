"""Names are one line of plain text (tlsaudit/domain/text.py), as tables."""

import pytest

from tlsaudit.domain.text import control_character, describe, single_line


@pytest.mark.parametrize("text, found", [
    ("Agency A", None),
    ("Bücher & Söhne — ünïcode 名前 🙂", None),
    ("Agency\r\nBcc: victim@example.com", (6, "\r")),
    ("line\nbreak", (4, "\n")),
    ("tab\there", (3, "\t")),
    ("nul\x00", (3, "\x00")),
    ("del\x7f", (3, "\x7f")),
    ("nel\x85", (3, "\x85")),                 # C1 NEL: a line break for str.splitlines()
    ("ls\u2028", (2, "\u2028")),              # line separator
    ("ps\u2029", (2, "\u2029")),              # paragraph separator
    ("evil\u202egnp.exe", (4, "\u202e")),     # right-to-left override (Trojan Source)
    ("iso\u2066late", (3, "\u2066")),
    ("zero\u200dwidth joiner", None),         # ZWJ is part of emoji and of some scripts: allowed
])
def test_it_finds_the_first_control_character(text, found):
    assert control_character(text) == found


def test_it_names_a_character_for_an_error_message():
    assert describe("\r") == "U+000D (carriage return)"
    assert describe("\u202e") == "U+202E (right-to-left override)"
    assert describe("\x85") == "U+0085 (control character)"


@pytest.mark.parametrize("text, limit, line", [
    ("Agency A", 200, "Agency A"),
    ("Agency\r\nBcc: victim@example.com", 200, "Agency Bcc: victim@example.com"),
    ("  spaced \t\t out \u2028 ", 200, "spaced out"),
    ("a" * 10, 5, "aaaa…"),
    ("word " * 5, 11, "word word…"),          # cut, then no trailing space before the ellipsis
    ("", 10, ""),
    (42, 10, "42"),
])
def test_it_makes_one_bounded_line(text, limit, line):
    assert single_line(text, limit) == line
    assert control_character(single_line(text, limit)) is None


@pytest.mark.parametrize("seconds, words", [(0.4, "0.4 s"), (9.96, "10.0 s"), (12.4, "12 s"), (60, "1 min"),
                                            (125, "2 min 5 s"), (3600, "1 h"), (3780, "1 h 3 min")])
def test_a_duration_is_said_in_seconds_minutes_and_hours(seconds, words):
    from tlsaudit.domain.text import duration_words

    assert duration_words(seconds) == words
