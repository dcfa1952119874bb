"""Audits of real TLS services other than HTTPS (#18 item 3): SMTP with STARTTLS and SMTPS (aiosmtpd),
IMAP, IMAPS, POP3 and POP3S (dovecot), FTP with AUTH TLS (vsftpd), XMPP (prosody), LDAP with
StartTLS and LDAPS (slapd), PostgreSQL with ssl=on (a cluster of our own). Each server offers TLS 1.2
with the two suites of daemons.TLS12_SUITES, and TLS 1.3: the audit must find exactly that, through
sslyze and through every probe of ours, grade it, and call the HTTP-only checks not applicable.
"""

from __future__ import annotations

import pytest

from tests.support.daemons import TLS12_SUITE_NAMES
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.scanfacts import NOT_APPLICABLE, PROTOCOLS
from workers.tls.engine import run_scan

SERVICES = ("smtp", "smtps", "imap", "imaps", "pop3", "pop3s", "ftp", "xmpp", "ldap", "ldaps", "postgres")
# The client simulation's profiles that have no suite in common with TLS12_SUITES (only ECDHE-RSA
# AES-GCM): IE 11 on Windows 7 offers ECDHE-RSA with CBC only.
NO_COMMON_SUITE = {"ie11_win7"}


@pytest.fixture(scope="module")
def audits(service_ports, service_pki):
    """Every service audited once, as the worker would (our CA as the custom one)."""
    return {scheme: run_scan("localhost", service_ports[scheme], ip="127.0.0.1", allow_private=True,
                             network_timeout=2, ca_file=str(service_pki.ca_file), service=scheme)
            for scheme in SERVICES}


@pytest.mark.parametrize("scheme", SERVICES)
def test_it_grades_the_service_from_what_it_offers(audits, scheme):
    outcome = audits[scheme]

    assert outcome.error is None, outcome.error
    facts = outcome.facts
    assert facts.service == scheme
    assert [p for p in PROTOCOLS if facts.supports(p)] == ["TLSv1.2", "TLSv1.3"]
    assert {s.name for s in facts.suites_for("TLSv1.2")} == TLS12_SUITE_NAMES
    assert all({t.store: t.trusted for t in d.trust}["Custom CA"] for d in facts.certificates)
    assert facts.certificates[0].hostname_matches is True
    assert build_report(facts, outcome.mozilla).grade.grade == "A"


@pytest.mark.parametrize("scheme", SERVICES)
def test_the_http_only_checks_are_not_applicable_and_nothing_http_was_sent(audits, scheme):
    facts = audits[scheme].facts

    assert facts.hsts is None
    assert facts.hsts_check.status == NOT_APPLICABLE and "not HTTP" in facts.hsts_check.reason
    assert facts.alpn == [] and facts.alpn_check.status == NOT_APPLICABLE
    assert "http_headers" not in facts.errors
    # sslyze's early-data test sends an HTTP request, on which slapd and PostgreSQL hang up: ours sends none.
    assert facts.errors == {}, facts.errors
    assert facts.check("early_data").tested, facts.check("early_data")
    assert audits[scheme].raw["scan_result"]["http_headers"]["status"] == "NOT_SCHEDULED"


@pytest.mark.parametrize("scheme", SERVICES)
def test_our_own_probes_speak_the_prelude_too(audits, scheme):
    """Preference, post-quantum and client simulation open connections of their own: each must do
    the STARTTLS exchange first, or they would all fail where sslyze succeeded."""
    facts = audits[scheme].facts

    assert set(facts.preferences) == {"TLSv1.2", "TLSv1.3"}
    assert all(p.enforced is not None for p in facts.preferences.values()), facts.preferences
    assert {s for p in facts.preferences.values() for s in p.order} >= TLS12_SUITE_NAMES
    assert facts.post_quantum.check.tested, facts.post_quantum.check
    simulated = {c.client: c for c in facts.client_simulation}
    assert all(c.tested for c in simulated.values()), [c.error for c in simulated.values() if not c.tested]
    succeeded = {name for name, c in simulated.items() if c.protocol}
    assert succeeded == set(simulated) - NO_COMMON_SUITE
    assert simulated["chromium"].protocol == "TLSv1.3"
