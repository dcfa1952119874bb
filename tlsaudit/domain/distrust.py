"""Distrust by date: stores that refuse a CA's certificates issued after a day while its root stays in
the store, so a store-based trust check still calls them trusted. Pure; the table is data
(data/distrust_after.json: the root's key, the store, the date, what "issued" means there, the source).

Chrome dates issuance by the leaf's earliest embedded SCT, Mozilla (CKA_NSS_SERVER_DISTRUST_AFTER) and
Java by its notBefore. A root is found by its key, never its name: the SHA-256 of its SubjectPublicKeyInfo
when the server sends it, else its key identifier as the AKI of a certificate the server sent.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tlsaudit.domain.scanfacts import Certificate, CertificateDeployment

DATA = Path(__file__).with_name("data") / "distrust_after.json"
BROWSERS = ("Chrome", "Mozilla")        # a browser's distrust is grade T; another store's is a finding
EARLIEST_SCT, NOT_BEFORE = "earliest_sct", "not_before"
# Chrome's root program: new leaves from serverAuth-only hierarchies (no clientAuth, no other purpose).
SERVER_AUTH_ONLY_FROM = datetime.fromisoformat("2026-06-15T00:00:00+00:00")


@dataclass(frozen=True)
class DistrustAfter:
    ca: str
    root: str
    spki_sha256: str
    key_id: str
    store: str
    after: datetime
    basis: str              # EARLIEST_SCT or NOT_BEFORE
    source: str


@dataclass(frozen=True)
class Distrust:
    entry: DistrustAfter
    issued: datetime | None     # the leaf's date as the store reads it (None: not known)
    basis_used: str             # which date that is (a leaf without SCTs falls back to notBefore)

    @property
    def applies(self) -> bool:
        return self.issued is not None and self.issued > self.entry.after

    @property
    def in_a_browser(self) -> bool:
        return self.entry.store in BROWSERS


@functools.cache
def table() -> tuple[DistrustAfter, ...]:
    data = json.loads(DATA.read_text())
    return tuple(DistrustAfter(ca=e["ca"], root=e["root"], spki_sha256=e["spki_sha256"], key_id=e["key_id"],
                               store=e["store"], after=datetime.fromisoformat(e["after"].replace("Z", "+00:00")),
                               basis=e["basis"], source=e["source"]) for e in data["entries"])


def table_version() -> str:
    return json.loads(DATA.read_text())["version"]


def anchored_at(entry: DistrustAfter, chain: tuple[Certificate, ...]) -> bool:
    return any(c.spki_sha256 == entry.spki_sha256 or (entry.key_id and c.authority_key_id == entry.key_id)
               for c in chain)


def distrusts(deployment: CertificateDeployment, entries: tuple[DistrustAfter, ...] | None = None) -> list[Distrust]:
    """Every dated distrust whose root the served chain leads to, with the leaf's date as that store reads it."""
    leaf = deployment.leaf
    found = []
    for entry in table() if entries is None else entries:
        if not anchored_at(entry, deployment.chain):
            continue
        if entry.basis == EARLIEST_SCT and leaf.earliest_sct is not None:
            found.append(Distrust(entry, leaf.earliest_sct, EARLIEST_SCT))
        else:   # no SCT: Chrome refuses it for CT anyway; its notBefore is the best date there is
            found.append(Distrust(entry, leaf.not_before, NOT_BEFORE))
    return found


def read_at_all(deployment: CertificateDeployment) -> bool:
    """Facts of older stored audits carry no keys: the table could not be applied."""
    return any(c.spki_sha256 for c in deployment.chain)


def basis_words(basis: str) -> str:
    return "its earliest Certificate Transparency timestamp" if basis == EARLIEST_SCT else "its start date (notBefore)"


def other_purposes(cert: Certificate) -> tuple[str, ...]:
    """Extended key usages besides serverAuth ("any purpose" included: no EKU at all); () when unknown."""
    if cert.ekus is None:
        return ()
    if not cert.ekus:
        return ("any purpose (no extended key usage)",)
    return tuple(eku for eku in cert.ekus if eku != "serverAuth")
