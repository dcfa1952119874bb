"""Which spellings reach one inbox (tlsaudit/domain/mailbox.py): the key of per-recipient limits."""

import pytest

from tlsaudit.domain.mailbox import mailbox_key


@pytest.mark.parametrize("spellings", [
    ["victim@example.com", "Victim@Example.COM", " victim@example.com ", "victim@example.com."],
    ["victim@example.com", "victim+1@example.com", "victim+newsletter+x@example.com"],
    ["victim@example.com", "ｖｉｃｔｉｍ@ｅｘａｍｐｌｅ.com", "victim＠example.com"],       # fullwidth forms (NFKC)
    ["kate@example.com", "\u212aate@example.com"],                                    # Kelvin sign K
    ["strasse@example.com", "STRASSE@example.com", "straße@example.com"],              # casefold ß → ss
    ["victim@bücher.example", "victim@xn--bcher-kva.example", "victim@BÜCHER.example"],
    ["victim@gmail.com", "v.i.c.t.i.m@gmail.com", "Vic.Tim+x@googlemail.com"],
])
def test_spellings_of_one_inbox_share_a_key(spellings):
    assert len({mailbox_key(address) for address in spellings}) == 1, [mailbox_key(a) for a in spellings]


@pytest.mark.parametrize("a, b", [
    ("victim@example.com", "victim@example.org"),
    ("victim@example.com", "v.ictim@example.com"),     # dots only merge at Gmail
    ("victim@example.com", "victim-1@example.com"),    # '-' is part of many real local parts
    ("anne@example.com", "anne.marie@example.com"),
])
def test_different_inboxes_keep_different_keys(a, b):
    assert mailbox_key(a) != mailbox_key(b)
