"""Mozilla server-side TLS profiles: our copy of the data, our checker, and the plain-words explanations."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import asdict, replace
from datetime import timedelta
from pathlib import Path

import pytest

from tests.domain.factories import NOW, ca_cert, deployment, ec_cert, make_facts, rsa_cert, suite, suites_for
from tlsaudit.domain.ciphers import classify
from tlsaudit.domain.mozilla import (
    GUIDELINES_FILE,
    GUIDELINES_URL,
    GUIDELINES_VERSION,
    INTERMEDIATE,
    MODERN,
    OLD,
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


def bundled_guidelines_file() -> Path:
    """sslyze's own copy of the guidelines, found as a file (the domain never imports sslyze)."""
    spec = importlib.util.find_spec("sslyze")
    return Path(next(iter(spec.submodule_search_locations))) / "mozilla_tls_profile" / f"{GUIDELINES_VERSION}.json"


def bundled_guidelines() -> dict:
    return json.loads(bundled_guidelines_file().read_text())["configurations"]


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
    """Every field a Profile must hold, read from sslyze's copy: lists as tuples, Mozilla's "TLSv1"
    as our "TLSv1.0", the cipher lists flattened (Go's list is left out: we write no Go config)."""
    theirs = bundled_guidelines()[name]
    plain = {key: tuple(value) if isinstance(value, list) else value for key, value in theirs.items()}
    ciphers = plain.pop("ciphers")
    versions = tuple("TLSv1.0" if v == "TLSv1" else v for v in plain["tls_versions"])
    return {**plain, "name": name, "tls_versions": versions, "ciphers_iana": tuple(ciphers["iana"]),
            "ciphers_openssl": tuple(ciphers["openssl"]), "ciphers_caddy": tuple(ciphers["caddy"])}


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_its_profile_data_is_the_guidelines_sslyze_bundles(name):
    ours = PROFILES[name]
    assert asdict(ours) == expected_profile(name)
    assert list(ours.mozilla_tls_versions) == bundled_guidelines()[name]["tls_versions"]


def test_the_vendored_guidelines_are_the_file_sslyze_bundles_byte_for_byte():
    """Same file, same verdicts: when sslyze moves to newer guidelines this fails, and the pin moves with it."""
    vendored = ROOT / "tlsaudit" / "domain" / "data" / GUIDELINES_FILE
    assert vendored.read_bytes() == bundled_guidelines_file().read_bytes()
    document = json.loads(vendored.read_text())
    assert (str(document["version"]), document["href"]) == (GUIDELINES_VERSION, GUIDELINES_URL)


@pytest.mark.parametrize("changes", [{"version": 5.8}, {"href": "https://example.org/guidelines/5.7.json"},
                                     {"version": None}])
def test_it_refuses_guidelines_other_than_the_pinned_ones(changes):
    document = {**json.loads(bundled_guidelines_file().read_text()), **changes}
    with pytest.raises(ValueError, match="expected 5.7 from https://ssl-config.mozilla.org/guidelines/5.7.json"):
        profiles_from(document)


def test_it_refuses_a_profile_that_lacks_a_field_rather_than_guess_it():
    document = json.loads(bundled_guidelines_file().read_text())
    del document["configurations"]["intermediate"]["dh_param_size"]
    with pytest.raises(KeyError, match="dh_param_size"):
        profiles_from(document)


def test_its_profiles_get_looser_from_modern_to_old():
    assert MODERN.tls_versions == ("TLSv1.3",) and MODERN.ciphers_iana == () and MODERN.certificate_types == ("ecdsa",)
    assert INTERMEDIATE.tls_versions == ("TLSv1.2", "TLSv1.3") and INTERMEDIATE.dh_param_size == 2048
    assert OLD.tls_versions[0] == "TLSv1.0" and OLD.server_preferred_order and OLD.dh_param_size == 1024
    assert set(INTERMEDIATE.ciphers_iana) < set(OLD.ciphers_iana)
    # Intermediate is forward secret and AEAD throughout; old keeps 3DES for IE8 on XP.
    infos = [classify(suite(n)) for n in INTERMEDIATE.ciphers_iana]
    assert all(i.is_forward_secret and i.is_aead for i in infos)
    assert "TLS_RSA_WITH_3DES_EDE_CBC_SHA" in OLD.ciphers_iana
    assert all(len(p.ciphers_iana) == len(p.ciphers_openssl) for p in PROFILES.values())


def test_it_refuses_an_unknown_profile_by_name():
    with pytest.raises(ValueError, match="modern, intermediate, old"):
        get_profile("paranoid")


# --- our checker ------------------------------------------------------------------------------

def test_a_typical_modern_server_meets_intermediate():
    assert check_profile(make_facts(), "intermediate") == {}


def test_a_legacy_server_misses_intermediate_on_versions_ciphers_and_dh_size():
    issues = check_profile(legacy_facts(), "intermediate")
    assert set(issues) == {"tls_versions", "ciphers", "dh_param_size"}
    assert issues["tls_versions"] == "TLS versions {'TLSv1', 'TLSv1.1'} are supported, but should be rejected."
    assert "'TLS_DHE_RSA_WITH_AES_128_CBC_SHA'" in issues["ciphers"]
    assert issues["dh_param_size"] == "DH parameter size is 1024, should be superior or equal to 2048."


def test_the_legacy_server_meets_old_except_for_suites_old_does_not_list():
    issues = check_profile(legacy_facts(), "old")
    assert set(issues) == {"ciphers"}  # TLS_DHE_RSA_WITH_AES_128_CBC_SHA is not in "old" either
    assert "TLS_RSA_WITH_AES_128_CBC_SHA'" not in issues["ciphers"]


def test_an_rsa_server_misses_modern_on_versions_suites_and_certificate():
    issues = check_profile(make_facts(), "modern")
    assert set(issues) == {"tls_versions", "ciphers", "certificate_types", "certificate_signatures"}


def test_a_tls13_only_ecdsa_server_meets_every_profile_it_can():
    facts = ecdsa_modern_facts()
    assert check_profile(facts, "modern") == {}
    assert check_profile(facts, "intermediate") == {}
    assert set(check_profile(facts, "old")) == {"certificate_types", "certificate_signatures"}
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
    ({"modern": {"compliant": False}, "intermediate": {"compliant": True}, "old": {"compliant": True}}, "intermediate"),
    ({"modern": {"compliant": True}, "intermediate": {"compliant": True}, "old": {"compliant": False}}, "modern"),
    ({"modern": {"compliant": None}, "intermediate": {"compliant": False}, "old": {"compliant": True}}, "old"),
    ({"modern": {"compliant": False}, "intermediate": {"compliant": None}, "old": {"compliant": None}}, None),
    ({}, None),
])
def test_best_profile_is_the_strictest_one_met(report, best):
    assert best_profile(report) == best


def test_profile_report_labels_a_typical_server_intermediate():
    report = profile_report(make_facts())
    assert best_profile(report) == "intermediate"
    assert report["intermediate"] == {"compliant": True, "issues": {}}


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
