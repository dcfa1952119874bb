"""Which inbox an address reaches, for counting mail per recipient.

A limit "per recipient" is worthless if Victim@Example.com, victim+1@example.com and
v.ictim@gmail.com each count separately: they all land in the same inbox. `mailbox_key` maps the
spellings that reach one inbox to one key. It is only ever a counting key; mail still goes to the
address as typed. Over-merging is the safe side (a limit shared by two people), so when in doubt
spellings are merged:

1. Unicode compatibility forms are folded (NFKC: fullwidth letters, the Kelvin sign) and case is
   folded (casefold: ß → ss), in the local part too, although RFC 5321 lets servers treat it as
   case-sensitive: in practice none do.
2. A `+tag` is dropped from the local part (sub-addressing; Gmail, Outlook, Fastmail, iCloud, Proton…).
3. The domain is compared in its ASCII (IDNA) form, without a trailing dot.
4. Gmail ignores dots in the local part, and googlemail.com is gmail.com.
"""

from __future__ import annotations

import unicodedata

import idna

GMAIL_DOMAINS = {"gmail.com", "googlemail.com"}


def mailbox_key(address: str) -> str:
    folded = unicodedata.normalize("NFKC", address.strip()).casefold()
    local, at, domain = folded.rpartition("@")
    if not at:
        return folded
    local = local.split("+", 1)[0]
    domain = ascii_domain(domain.rstrip("."))
    if domain in GMAIL_DOMAINS:
        local, domain = local.replace(".", ""), "gmail.com"
    return f"{local}@{domain}"


def ascii_domain(domain: str) -> str:
    """The IDNA (punycode) form, as site host names are stored; a domain that is not valid IDNA is kept as is."""
    if domain.isascii():
        return domain
    try:
        return idna.encode(domain, uts46=True).decode("ascii")
    except idna.IDNAError:
        return domain
