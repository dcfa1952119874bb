"""Findings: one small rule per check, each turning `ScanFacts` into a `Finding` a site owner can read.

One module per category the report groups findings by (the part of the id before the dot:
`proto`, `cipher`, `kx`, `vuln`, `cert`, `hsts`, `reneg`, `tls`, `perf`, `scan`), the way sslyze
keeps one plugin per scan command. Each module registers its rules in `RULES` (id -> rule) when it
is imported, which is why this file imports them all; `derive_findings` runs every registered rule
and sorts the findings.

A rule whose input was not tested answers `untested(reason)`: never a pass.
"""

# Imported for their side effect: each module registers its rules in RULES.
from tlsaudit.domain.findings import cert, cipher, hsts, kx, perf, proto, reneg, scan, tls, vuln  # noqa: F401
from tlsaudit.domain.findings.cert import is_trusted
from tlsaudit.domain.findings.registry import RULES, SEVERITIES, STATUSES, Finding, Rule, derive_findings

__all__ = ["RULES", "SEVERITIES", "STATUSES", "Finding", "Rule", "derive_findings", "is_trusted"]
