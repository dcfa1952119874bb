"""CAA (RFC 8659), judged: the records' syntax, and whether the CA that issued the served certificate may
issue its next one. Pure; the CAs' CAA names are data (data/caa_identifiers.json).

A CA checks the relevant RRset (the first name up the tree that has CAA records): with no "issue" property
any CA may issue; "issue" properties list the CAs that may (";" alone: none); for a wildcard name
"issuewild" properties, when present, replace them. An unknown property flagged critical (flags bit 128)
forbids every issuance. A CA also refuses when the lookup fails.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from tlsaudit.domain.scanfacts import CaaFacts, CaaRecord

DATA = Path(__file__).with_name("data") / "caa_identifiers.json"
KNOWN_TAGS = ("issue", "issuewild", "iodef", "issuemail", "issuevmc", "contactemail", "contactphone")
TAG = re.compile(r"^[A-Za-z0-9]+$")
LABEL = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
PARAMETER = re.compile(r"^[A-Za-z0-9]+=[\x21-\x3a\x3c-\x7e]*$")


@dataclass(frozen=True)
class Issuer:
    """One "issue"/"issuewild" value: the CA's domain ("" for ";": nobody), its parameters, or why unreadable."""
    domain: str
    parameters: tuple[str, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class CaaVerdict:
    allowed: bool | None            # may the served certificate's CA issue the next one? None: unknown
    text: str                       # why, in a site owner's words
    problems: tuple[str, ...] = ()  # syntax errors of the records


@functools.cache
def ca_table() -> tuple[dict, ...]:
    return tuple(json.loads(DATA.read_text())["cas"])


def ca_of(issuer_org: str) -> dict | None:
    wanted = issuer_org.strip().casefold()
    return next((ca for ca in ca_table() if wanted in (o.casefold() for o in ca["issuer_orgs"])), None)


def parse_issuer(value: str) -> Issuer:
    """RFC 8659 §4.2: issuer-domain-name [";" parameters]; ";" alone names no CA."""
    head, _, rest = value.partition(";")
    domain = head.strip().lower().rstrip(".")
    parameters = tuple(p.strip() for p in rest.split(";") if p.strip())
    if domain and not all(LABEL.match(label) for label in domain.split(".")):
        return Issuer(domain, parameters, error=f'"{head.strip()}" is not a domain name')
    bad = [p for p in parameters if not PARAMETER.match(p)]
    if bad:
        return Issuer(domain, parameters, error=f"the parameter {bad[0]!r} is not key=value")
    return Issuer(domain, parameters)


def syntax_problems(records: tuple[CaaRecord, ...]) -> list[str]:
    problems = []
    for r in records:
        where = f'{r.owner} CAA {r.flags} {r.tag} "{r.value}"'
        if r.flags not in (0, 128):
            problems.append(f"{where}: flags {r.flags} (only 0, or 128 for critical, are defined)")
        if not TAG.match(r.tag):
            problems.append(f"{where}: the tag must be letters and digits")
        elif r.tag.lower() in ("issue", "issuewild") and (error := parse_issuer(r.value).error):
            problems.append(f"{where}: {error}")
        elif r.tag.lower() not in KNOWN_TAGS and r.flags & 128:
            problems.append(f"{where}: an unknown property marked critical forbids every CA from issuing")
    return problems


def judge(caa: CaaFacts, issuer_org: str, wildcard: bool) -> CaaVerdict:
    """Whether the CA of the served certificate (by its issuer's organization) may issue the next one."""
    if caa.error:
        return CaaVerdict(None, f"{caa.error}; a CA refuses to issue while the lookup fails")
    problems = tuple(syntax_problems(caa.records))
    if not caa.records:
        return CaaVerdict(True, f"no CAA records at {' or '.join(caa.queried)}: any CA may issue", problems)
    owner = caa.records[0].owner
    critical = [r for r in caa.records if r.flags & 128 and r.tag.lower() not in KNOWN_TAGS]
    if critical:
        return CaaVerdict(False, f"{owner} has a critical CAA property no CA understands ({critical[0].tag}): "
                                 "no CA may issue", problems)
    issue = [parse_issuer(r.value) for r in caa.records if r.tag.lower() == "issue"]
    wild = [parse_issuer(r.value) for r in caa.records if r.tag.lower() == "issuewild"]
    rules = wild if wildcard and wild else issue
    kind = "issuewild" if rules is wild and wild else "issue"
    if not rules:
        return CaaVerdict(True, f"the CAA records at {owner} restrict no issuer ({kind} absent)", problems)
    allowed = sorted({i.domain for i in rules if i.domain and not i.error})
    if not allowed:
        return CaaVerdict(False, f'CAA at {owner} allows no CA at all ({kind} ";")', problems)
    ca = ca_of(issuer_org)
    listed = ", ".join(allowed)
    if ca is None:
        return CaaVerdict(None, f"CAA at {owner} allows {listed}; which names the issuer of this certificate "
                                f"({issuer_org or 'unknown'}) answers to is not in our table", problems)
    if set(ca["caa"]) & set(allowed):
        return CaaVerdict(True, f"CAA at {owner} allows {listed}, and {ca['name']} (which issued this certificate) "
                                "is among them", problems)
    return CaaVerdict(False, f"CAA at {owner} allows only {listed}: {ca['name']}, which issued this certificate, "
                             f"may not issue its renewal ({ca['name']} answers to {', '.join(ca['caa'])})", problems)
