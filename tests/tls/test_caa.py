"""CAA records (#29 item 7), looked up as a CA climbs the DNS tree, from a DNS server of our own on
127.0.0.1, then judged: which CA may issue the served certificate's renewal, and the records' syntax."""

from __future__ import annotations

import socket
import time

import pytest

from tests.domain.factories import deployment, make_facts, rsa_cert
from tests.hostile import dns_server
from tlsaudit.domain.caa import judge, parse_issuer
from tlsaudit.domain.findings import derive_findings
from tlsaudit.domain.scanfacts import CaaFacts, CaaRecord
from workers.net.caa import look_up_caa

LE = "CN=R12,O=Let's Encrypt,C=US"
ZONE = {
    "shop.caa-lab.net": {"A": ["127.0.0.1"]},                         # no CAA of its own: the parent's apply
    "caa-lab.net": {"CAA": ['0 issue "letsencrypt.org"', '0 issuewild ";"', '0 iodef "mailto:tls@caa-lab.net"']},
    "own.caa-lab.net": {"CAA": ['0 issue "pki.goog; accounturi=https://example.net/acct/1"']},
    "broken.caa-lab.net": {"RCODE": "SERVFAIL"},
    "odd.caa-lab.net": {"CAA": ['0 issue "not a domain!"', '128 tbs "unknown-critical"']},
}


@pytest.fixture(scope="module")
def dns():
    with dns_server(ZONE) as server:
        yield server


def caa_of(name: str, dns) -> CaaFacts:
    return look_up_caa(name, dns.address, 4)


def findings_of(host: str, caa: CaaFacts, issuer: str = LE, san=None):
    leaf = rsa_cert(issuer=issuer, san=san or (host,))
    facts = make_facts(cert=deployment(leaf), host=host)
    facts.caa = caa
    return {f.id: f for f in derive_findings(facts)}["cert.caa"]


def test_the_lookup_climbs_to_the_first_name_with_records(dns):
    caa = caa_of("shop.caa-lab.net", dns)
    assert caa.queried == ("shop.caa-lab.net", "caa-lab.net") and caa.error == ""
    assert {(r.owner, r.tag, r.value) for r in caa.records} == {
        ("caa-lab.net", "issue", "letsencrypt.org"), ("caa-lab.net", "issuewild", ";"),
        ("caa-lab.net", "iodef", "mailto:tls@caa-lab.net")}
    assert dns.asked("shop.caa-lab.net", "CAA") == 1 and dns.asked("caa-lab.net", "CAA") == 1
    # A name of its own set stops the climb there
    assert {r.owner for r in caa_of("own.caa-lab.net", dns).records} == {"own.caa-lab.net"}
    # Nothing anywhere: every name up to the one below the TLD was asked
    assert caa_of("a.b.nowhere.net", dns) == CaaFacts(("a.b.nowhere.net", "b.nowhere.net", "nowhere.net"), ())


def test_a_failed_lookup_and_a_silent_server_end_as_errors_within_the_budget(dns):
    broken = caa_of("broken.caa-lab.net", dns)
    assert broken.records == () and "the DNS server answered SERVFAIL" in broken.error
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    try:
        started = time.monotonic()
        caa = look_up_caa("shop.caa-lab.net", silent.getsockname(), 1.5)
        assert time.monotonic() - started < 2.5
        assert "no answer within" in caa.error
    finally:
        silent.close()


def test_names_no_public_ca_issues_for_are_not_looked_up(dns):
    for name in ("localhost", "127.0.0.1", "shop.example.com", "site.probe.test", "printer.local"):
        caa = look_up_caa(name, dns.address, 4)
        assert caa.skipped and caa.queried == ()
    assert dns.queries == [] or all(q[0].endswith("caa-lab.net") or "nowhere" in q[0] for q in dns.queries)


def test_the_verdicts_a_site_owner_reads(dns):
    shop = caa_of("shop.caa-lab.net", dns)
    assert findings_of("shop.caa-lab.net", shop).status == "pass"
    refused = findings_of("shop.caa-lab.net", shop, issuer="CN=WE1,O=Google Trust Services,C=US")
    assert (refused.status, refused.severity) == ("fail", "high")
    assert ("CAA at caa-lab.net allows only letsencrypt.org: Google Trust Services, which issued this certificate, "
            "may not issue its renewal") in refused.evidence
    wildcard = findings_of("shop.caa-lab.net", shop, san=("*.caa-lab.net",))
    assert wildcard.status == "fail" and 'allows no CA at all (issuewild ";")' in wildcard.evidence
    own = findings_of("own.caa-lab.net", caa_of("own.caa-lab.net", dns), issuer="CN=WR1,O=Google Trust Services,C=US")
    assert own.status == "pass" and "Google Trust Services (which issued this certificate) is among them" in own.evidence
    odd = findings_of("odd.caa-lab.net", caa_of("odd.caa-lab.net", dns))
    assert odd.status == "fail" and "critical CAA property no CA understands (tbs)" in odd.evidence
    assert '"not a domain!" is not a domain name' in odd.evidence
    none = findings_of("a.b.nowhere.net", caa_of("a.b.nowhere.net", dns))
    assert (none.status, none.title) == ("info", "No CAA records")
    failed = findings_of("broken.caa-lab.net", caa_of("broken.caa-lab.net", dns))
    assert failed.status == "not_tested" and "a CA refuses to issue while the lookup fails" in failed.reason


def test_issue_values_are_parsed_as_rfc_8659_writes_them():
    assert parse_issuer("letsencrypt.org; validationmethods=dns-01").parameters == ("validationmethods=dns-01",)
    assert parse_issuer(";").domain == "" and parse_issuer(";").error == ""
    assert parse_issuer("ca.example; bad parameter").error == "the parameter 'bad parameter' is not key=value"
    unknown = judge(CaaFacts(("x.net",), (CaaRecord("x.net", 0, "issue", "ca.unknown-to-us.net"),)), "Tiny CA", False)
    assert unknown.allowed is None and "is not in our table" in unknown.text


@pytest.mark.slow
def test_an_audit_stores_the_records_and_reports_them(dns, tls_lab):
    """The engine looks the records up beside its probes, through the configured resolver."""
    from workers.tls.engine import run_scan

    outcome = run_scan("shop.caa-lab.net", tls_lab.port("a_plus_rsa_hsts"), ip="127.0.0.1",
                       ca_file=str(tls_lab.ca_file), allow_private=True, resolver=dns.address, deadline_s=50)
    facts = outcome.facts
    assert facts is not None, outcome.error
    assert facts.caa.queried == ("shop.caa-lab.net", "caa-lab.net")
    assert {r.tag for r in facts.caa.records} == {"issue", "issuewild", "iodef"}
    finding = {f.id: f for f in derive_findings(facts)}["cert.caa"]
    # the lab's CA names no organization of our table, and is trusted through the custom CA file
    assert finding.status in ("info", "pass"), finding
