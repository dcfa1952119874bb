"""Mozilla server-side TLS profiles: our copy of the data, our checker, and the plain-words explanations."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace
from datetime import timedelta
from pathlib import Path

import pytest

from tests.domain.factories import NOW, ca_cert, deployment, ec_cert, make_facts, rsa_cert, suite, suites_for
from tlsaudit.domain.ciphers import classify
from tlsaudit.domain.mozilla import (
    GUIDELINES_DATE,
    GUIDELINES_FILE,
    GUIDELINES_SHA256,
    GUIDELINES_URL,
    GUIDELINES_VERSION,
    HYBRID_GROUP,
    INTERMEDIATE,
    MODERN,
    PROFILE_NAMES,
    PROFILES,
    best_profile,
    check_profile,
    explain_issues,
    get_profile,
    profile_report,
    profiles_from,
)
from tlsaudit.domain.scanfacts import BAD, NOT_TESTED, Check

ROOT = Path(__file__).resolve().parents[2]
LEGACY_PROTOCOLS = ("TLSv1.0", "TLSv1.1", "TLSv1.2")


VENDORED = ROOT / "tlsaudit" / "domain" / "data" / GUIDELINES_FILE


def published_guidelines() -> dict:
    """Mozilla's document as vendored (its digest is checked below), read as plain JSON."""
    return json.loads(VENDORED.read_text())


def legacy_facts():
    """The legacy server of sslyze-notes §5: TLS 1.0-1.2, CBC and plain-RSA suites, a 1024-bit DH group."""
    extra = [suite("TLS_DHE_RSA_WITH_AES_128_CBC_SHA", p, kx_bits=1024) for p in LEGACY_PROTOCOLS]
    extra += [suite("TLS_RSA_WITH_AES_128_CBC_SHA", p) for p in LEGACY_PROTOCOLS]
    return make_facts(protocols=LEGACY_PROTOCOLS, suites=suites_for(LEGACY_PROTOCOLS) + extra)


def ecdsa_modern_facts():
    ec_intermediate = replace(ca_cert(), key_type="EC", key_bits=384, curve="secp384r1", rsa_exponent=None)
    leaf = ec_cert(not_before=NOW - timedelta(days=10), not_after=NOW + timedelta(days=80))
    return make_facts(protocols=("TLSv1.3",), cert=deployment(leaf, chain=(leaf, ec_intermediate)))


# --- profile data -----------------------------------------------------------------------------

def expected_profile(name: str) -> dict:
    """Every field a Profile must hold, read from Mozilla's document: lists as tuples, Mozilla's "TLSv1"
    as our "TLSv1.0", the cipher lists flattened (Caddy and Go take the IANA names, as in the generator)."""
    theirs = published_guidelines()["configurations"][name]
    plain = {key: tuple(value) if isinstance(value, list) else value for key, value in theirs.items()}
    ciphers = plain.pop("ciphers")
    versions = tuple("TLSv1.0" if v == "TLSv1" else v for v in plain["tls_versions"])
    return {**plain, "name": name, "tls_versions": versions, "ciphers_iana": tuple(ciphers["iana"]),
            "ciphers_openssl": tuple(ciphers["openssl"])}


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_its_profile_data_is_mozillas_document(name):
    ours = PROFILES[name]
    assert asdict(ours) == expected_profile(name)
    assert list(ours.mozilla_tls_versions) == published_guidelines()["configurations"][name]["tls_versions"]


def test_the_vendored_guidelines_are_mozillas_published_file_byte_for_byte():
    """The digest of ssl-config-generator's src/static/guidelines/6.0.json as published: a changed or
    re-serialised copy fails here, and a newer version moves the pin, the digest and this test together."""
    assert hashlib.sha256(VENDORED.read_bytes()).hexdigest() == GUIDELINES_SHA256
    document = published_guidelines()
    assert (str(document["version"]), document["href"]) == (GUIDELINES_VERSION, GUIDELINES_URL)
    assert set(document["configurations"]) == set(PROFILE_NAMES)
    assert GUIDELINES_DATE == "2026-04-06"


@pytest.mark.parametrize("changes", [{"version": 5.8}, {"href": "https://example.org/guidelines/6.0.json"},
                                     {"version": None}])
def test_it_refuses_guidelines_other_than_the_pinned_ones(changes):
    document = {**published_guidelines(), **changes}
    with pytest.raises(ValueError, match="expected 6.0 from https://ssl-config.mozilla.org/guidelines/6.0.json"):
        profiles_from(document)


def test_it_refuses_a_profile_that_lacks_a_field_rather_than_guess_it():
    document = published_guidelines()
    del document["configurations"]["intermediate"]["dh_param_size"]
    with pytest.raises(KeyError, match="dh_param_size"):
        profiles_from(document)


def test_guidelines_6_0_put_the_hybrid_group_first_and_list_no_dhe():
    assert MODERN.tls_versions == ("TLSv1.3",) and MODERN.ciphers_iana == () and MODERN.certificate_types == ("ecdsa",)
    assert INTERMEDIATE.tls_versions == ("TLSv1.2", "TLSv1.3")
    for profile in PROFILES.values():
        assert profile.tls_curves[0] == HYBRID_GROUP == "X25519MLKEM768"
        assert profile.classical_curves == ("X25519", "prime256v1", "secp384r1")
    # Intermediate is ECDHE, forward secret and AEAD throughout: DHE left with 6.0.
    infos = [classify(suite(n)) for n in INTERMEDIATE.ciphers_iana]
    assert infos and all(i.is_forward_secret and i.is_aead and "ECDHE" in i.name for i in infos)
    assert not any("DHE-" in n and not n.startswith("ECDHE") for n in INTERMEDIATE.ciphers_openssl)
    assert all(len(p.ciphers_iana) == len(p.ciphers_openssl) for p in PROFILES.values())


def test_it_refuses_an_unknown_profile_by_name():
    with pytest.raises(ValueError, match="expected one of modern, intermediate$"):
        get_profile("paranoid")


def test_the_withdrawn_old_profile_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown Mozilla profile 'old'"):
        get_profile("old")


# --- our checker ------------------------------------------------------------------------------

def test_a_typical_modern_server_meets_intermediate():
    assert check_profile(make_facts(), "intermediate") == {}


def test_a_legacy_server_misses_intermediate_on_versions_ciphers_and_dh_size():
    issues = check_profile(legacy_facts(), "intermediate")
    assert set(issues) == {"tls_versions", "ciphers", "dh_param_size"}
    assert issues["tls_versions"] == "TLS versions {'TLSv1', 'TLSv1.1'} are supported, but should be rejected."
    assert "'TLS_DHE_RSA_WITH_AES_128_CBC_SHA'" in issues["ciphers"]
    assert issues["dh_param_size"] == "DH parameter size is 1024, should be superior or equal to 2048."


def test_a_dhe_suite_that_5_7_allowed_misses_intermediate_6_0():
    facts = make_facts(suites=suites_for(("TLSv1.2", "TLSv1.3"))
                       + [suite("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=2048)])
    issues = check_profile(facts, "intermediate")
    assert set(issues) == {"ciphers"} and "'TLS_DHE_RSA_WITH_AES_128_GCM_SHA256'" in issues["ciphers"]


def test_an_rsa_server_misses_modern_on_versions_suites_and_certificate():
    issues = check_profile(make_facts(), "modern")
    assert set(issues) == {"tls_versions", "ciphers", "certificate_types", "certificate_signatures"}


def test_a_tls13_only_ecdsa_server_meets_every_profile_it_can():
    facts = ecdsa_modern_facts()
    assert check_profile(facts, "modern") == {}
    assert check_profile(facts, "intermediate") == {}
    assert best_profile(profile_report(facts)) == "modern"


@pytest.mark.parametrize("facts, key, text", [
    (make_facts(compression=BAD), "tls_vulnerability_compression", "compression"),
    (make_facts(heartbleed=BAD), "tls_vulnerability_heartbleed", "Heartbleed"),
    (make_facts(ccs_injection=BAD), "tls_vulnerability_ccs_injection", "CCS"),
    (make_facts(fallback_scsv=BAD), "tls_vulnerability_fallback_scsv", "TLS_FALLBACK_SCSV"),
    (make_facts(secure_renegotiation=BAD), "tls_vulnerability_renegotiation", "renegotiation"),
    (make_facts(extended_master_secret=BAD), "tls_vulnerability_extended_master_secret", "Extended Master Secret"),
    (make_facts(robot=Check(BAD, value="VULNERABLE_STRONG_ORACLE")), "tls_vulnerability_robot", "ROBOT"),
    (replace(make_facts(), curves=["X25519", "secp521r1"]), "tls_curves", "'secp521r1'"),
    (make_facts(cert=rsa_cert(bits=1024)), "rsa_key_size", "RSA key size is 1024"),
    (make_facts(cert=rsa_cert(not_after=NOW + timedelta(days=400))), "maximum_certificate_lifespan", "430 days"),
    (make_facts(cert=deployment(trusted=False)), "certificate_path_validation", "CN=localhost"),
    (make_facts(cert=deployment(hostname_matches=False)), "certificate_path_validation", "CN=localhost"),
    (make_facts(cert=ec_cert("secp521r1", 521)), "certificate_curves", "secp521r1"),
    (make_facts(suites=suites_for(("TLSv1.2", "TLSv1.3")) + [suite("TLS_AES_128_CCM_SHA256", "TLSv1.3")]),
     "ciphersuites", "TLS_AES_128_CCM_SHA256"),
    (make_facts(suites=suites_for(("TLSv1.2", "TLSv1.3"))
                + [suite("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=224, curve="secp224r1")]),
     "ecdh_param_size", "ECDH parameter size is 224"),
])
def test_it_flags_each_intermediate_requirement(facts, key, text):
    issues = check_profile(facts, "intermediate")
    assert key in issues and text in issues[key], issues


def test_a_weak_robot_oracle_does_not_fail_the_profile_like_sslyze():
    assert check_profile(make_facts(robot=Check(BAD, value="VULNERABLE_WEAK_ORACLE")), "intermediate") == {}


def test_untested_inputs_make_compliance_unknown_not_true():
    facts = make_facts(heartbleed=NOT_TESTED, not_tested_protocols=("SSLv3",))
    issues = check_profile(facts, "intermediate")
    assert set(issues) == {"incomplete"}
    assert "protocol SSLv3" in issues["incomplete"] and "heartbleed" in issues["incomplete"]
    report = profile_report(facts)
    assert report["intermediate"]["compliant"] is None and report["modern"]["compliant"] is False


@pytest.mark.parametrize("report, best", [
    ({"modern": {"compliant": False}, "intermediate": {"compliant": True}}, "intermediate"),
    ({"modern": {"compliant": True}, "intermediate": {"compliant": True}}, "modern"),
    # a verdict stored under 5.7 may hold "old": it is not a profile any more
    ({"modern": {"compliant": None}, "intermediate": {"compliant": False}, "old": {"compliant": True}}, None),
    ({"modern": {"compliant": False}, "intermediate": {"compliant": None}}, None),
    ({}, None),
])
def test_best_profile_is_the_strictest_one_met(report, best):
    assert best_profile(report) == best


def test_profile_report_labels_a_typical_server_intermediate():
    report = profile_report(make_facts())
    assert best_profile(report) == "intermediate"
    assert report["intermediate"] == {"compliant": True, "issues": {}, "guidelines": "6.0"}


# --- plain words ------------------------------------------------------------------------------

def test_it_explains_sslyze_issue_texts_in_plain_sentences():
    # Texts exactly as sslyze 6.3.1's checker words them for the legacy server.
    issues = {
        "tls_versions": "TLS versions {'TLSv1', 'TLSv1.1'} are supported, but should be rejected.",
        "ciphers": "Cipher suites {'TLS_RSA_WITH_AES_128_CBC_SHA', 'TLS_DH_anon_WITH_AES_128_CBC_SHA'} are "
                   "supported, but should be rejected.",
        "dh_param_size": "DH parameter size is 1024, should be superior or equal to 2048.",
        "tls_curves": "TLS curves {'X448', 'secp521r1'} are supported, but should be rejected.",
        "certificate_path_validation": "Certificate path validation failed for CN=localhost.",
        "tls_vulnerability_heartbleed": "Server is vulnerable to the OpenSSL Heartbleed attack.",
        "something_new": "A criterion a later sslyze adds.",
    }
    sentences = explain_issues("intermediate", issues)
    assert len(sentences) == len(issues)
    versions, ciphers, dh, curves, trust, heartbleed, unknown = sentences
    assert versions == ("Turn off TLSv1.0 and TLSv1.1: the Mozilla intermediate profile allows only "
                        "TLS 1.2 and TLS 1.3.")
    assert ciphers.startswith("Remove 2 cipher suites") and "TLS_DH_anon_WITH_AES_128_CBC_SHA" in ciphers
    assert "1024 bits" in dh and "2048" in dh and "ffdhe2048" in dh
    assert "X448 and secp521r1" in curves
    assert "do not trust" in trust
    assert "Heartbleed" in heartbleed and "replace your keys" in heartbleed
    assert unknown == "The Mozilla intermediate profile: A criterion a later sslyze adds."


def test_it_explains_our_own_checker_output_too():
    sentences = explain_issues("intermediate", check_profile(legacy_facts(), "intermediate"))
    assert any(s.startswith("Turn off TLSv1.0 and TLSv1.1") for s in sentences)
    assert any("Your Diffie-Hellman group is 1024 bits" in s for s in sentences)
