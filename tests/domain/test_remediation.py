"""Recommendations: what to change, and the grade each change predicts; plus the server snippets."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from tests.domain.factories import (
    NOW,
    deployment,
    ec_cert,
    make_facts,
    preference,
    rsa_cert,
    suite,
    suites_for,
)
from tlsaudit.domain.grading import GRADES, grade
from tlsaudit.domain.mozilla import INTERMEDIATE, MODERN, PROFILES, check_profile
from tlsaudit.domain.remediation import Recommendation, grade_after, predict_all, recommend
from tlsaudit.domain.scanfacts import BAD, OK, Check, PostQuantum
from tlsaudit.domain.snippets import SERVERS, config_snippets

ALL_TLS = ("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3")
MODERN_PROTOCOLS = ("TLSv1.2", "TLSv1.3")


def by_id(recs: list[Recommendation]) -> dict[str, Recommendation]:
    return {r.id: r for r in recs}


def better(a: str, b: str) -> bool:
    return GRADES.index(a) < GRADES.index(b)


def tls10_site(**kwargs):
    """spec #4: TLS 1.0-1.3 with AEAD and CBC suites: grade B only because of TLS 1.0/1.1."""
    return make_facts(protocols=ALL_TLS, **kwargs)


def legacy_site():
    """Everything an old appliance does wrong at once (grade C, with F-level ingredients removed)."""
    protocols = ("SSLv3", "TLSv1.0", "TLSv1.1", "TLSv1.2")
    extra = [suite("TLS_RSA_WITH_3DES_EDE_CBC_SHA", "TLSv1.2"), suite("TLS_RSA_WITH_RC4_128_SHA", "TLSv1.0"),
             suite("TLS_DHE_RSA_WITH_AES_128_CBC_SHA", "TLSv1.2", kx_bits=1024),
             suite("TLS_RSA_WITH_AES_128_GCM_SHA256", "TLSv1.2")]
    return make_facts(protocols=protocols, suites=suites_for(protocols) + extra, hsts_max_age=None,
                      compression=BAD, secure_renegotiation=BAD, cert=deployment(chain_complete=False),
                      session_id_resumption=BAD, session_ticket_resumption=BAD)


def test_a_tls10_site_is_told_to_disable_tls10_and_11_which_predicts_a_plus():
    facts = tls10_site()
    assert grade(facts).grade == "B"
    rec = by_id(recommend(facts))["proto.disable_legacy"]
    assert rec.title == "Disable TLS 1.0 and TLS 1.1"
    assert rec.predicted_grade == "A+"
    assert "ssl_protocols TLSv1.2 TLSv1.3" in rec.change
    assert "TLS 1.0 or TLS 1.1 is supported" in rec.why or "TLS 1.0 and TLS 1.1 are supported" in rec.why
    assert rec.kind == "security"


def test_a_tls10_11_only_site_is_predicted_the_tls13_its_protocols_line_turns_on():
    """#28 item 5: "Allow only TLSv1.2 and TLSv1.3" on a TLS 1.0/1.1-only server also turns on TLS 1.3
    (the rescan gave A+ where the prediction, which only removed the old versions, said A-)."""
    facts = make_facts(protocols=("TLSv1.0", "TLSv1.1"))
    rec = by_id(recommend(facts))["proto.disable_legacy"]
    after = rec.apply(facts)
    assert [v for v in ALL_TLS if after.supports(v)] == ["TLSv1.2", "TLSv1.3"]
    assert [s.name for s in after.suites_for("TLSv1.3")] == list(INTERMEDIATE.ciphersuites)
    assert rec.predicted_grade == "A+"
    assert "turns on TLS 1.2 and TLS 1.3" in rec.change
    assert {"proto.tls13_missing", "warn.no_tls13", "proto.tls12_missing"} <= set(rec.fixes)


def test_enabling_tls13_drops_the_client_simulation_that_no_longer_says_what_clients_get():
    """A rescan found the no-forward-secrecy cap gone: Chromium and the others negotiate TLS 1.3 then."""
    from tlsaudit.domain.scanfacts import ClientHandshake

    chromium = ClientHandshake("chromium", "Chromium", protocol="TLSv1.2", suite="TLS_RSA_WITH_AES_128_GCM_SHA256")
    facts = make_facts(protocols=("TLSv1.2",), suites=["TLS_RSA_WITH_AES_128_GCM_SHA256",
                                                       "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
                       client_simulation=[chromium])
    assert "cap.no_forward_secrecy" in {c.rule_id for c in grade(facts).caps}
    rec = by_id(recommend(facts))["proto.enable_tls13"]
    assert rec.apply(facts).client_simulation is None and rec.predicted_grade == "A+"   # HSTS set


def test_a_suite_change_that_needs_tls12_says_the_protocols_line_that_turns_it_on():
    """A TLS 1.0/1.1-only server trimmed to the profile's AEAD suites has none left on its versions: the
    change must say to allow TLS 1.2 and 1.3 too (a rescan of the change as written found no suite)."""
    facts = make_facts(protocols=("TLSv1.0", "TLSv1.1"), suites=[
        suite("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", p) for p in ("TLSv1.0", "TLSv1.1")])
    rec = by_id(recommend(facts))["cipher.match_profile"]
    assert ("The remaining suites need TLS 1.2 and TLS 1.3, which the server does not offer now: allow them in "
            "the same change (nginx: ssl_protocols TLSv1.2 TLSv1.3; Apache: SSLProtocol -all +TLSv1.2 +TLSv1.3).") \
        in rec.change
    assert [v for v in ALL_TLS if rec.apply(facts).supports(v)] == ["TLSv1.2", "TLSv1.3"]
    kept = make_facts(protocols=("TLSv1.2",), suites=["TLS_RSA_WITH_AES_128_GCM_SHA256"])
    assert "ssl_protocols" not in by_id(recommend(kept))["cipher.forward_secrecy"].change


def test_removing_a_broken_suite_that_leaves_an_old_version_running_turns_nothing_on():
    """A TLS 1.0-only server with RC4 and an ECDHE CBC suite keeps TLS 1.0 after losing RC4: no version comes
    on in the prediction, and the change says no protocols line (review of #28's remediation)."""
    facts = make_facts(protocols=("TLSv1.0",), suites=[suite("TLS_RSA_WITH_RC4_128_SHA", "TLSv1.0"),
                                                       suite("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLSv1.0")])
    rec = by_id(recommend(facts))["cipher.disable_insecure"]
    after = rec.apply(facts)
    assert [v for v in ALL_TLS if after.supports(v)] == ["TLSv1.0"]
    assert "ssl_protocols" not in rec.change


def test_the_protocols_line_turns_on_no_version_the_scan_could_not_test():
    facts = make_facts(protocols=("TLSv1.0", "TLSv1.1", "TLSv1.2"), not_tested_protocols=("TLSv1.3",))
    rec = by_id(recommend(facts))["proto.disable_legacy"]
    assert not rec.apply(facts).supports("TLSv1.3") and "turns on" not in rec.change


def test_without_hsts_the_same_change_predicts_a():
    rec = by_id(recommend(tls10_site(hsts_max_age=None)))["proto.disable_legacy"]
    assert rec.predicted_grade == "A"


def test_applying_a_recommendation_drops_the_old_protocols_and_their_suites_on_a_copy():
    facts = tls10_site()
    before = json.dumps(facts.to_dict(), sort_keys=True)
    after = by_id(recommend(facts))["proto.disable_legacy"].apply(facts)
    assert json.dumps(facts.to_dict(), sort_keys=True) == before  # the scan itself is untouched
    assert not after.supports("TLSv1.0") and not after.supports("TLSv1.1")
    assert after.suites_for("TLSv1.0") == [] and after.suites_for("TLSv1.2") == facts.suites_for("TLSv1.2")


def test_a_site_without_forward_secrecy_is_told_to_use_ecdhe_and_its_grade_rises():
    facts = make_facts(protocols=("TLSv1.2",), suites=["TLS_RSA_WITH_AES_128_GCM_SHA256",
                                                       "TLS_RSA_WITH_AES_256_GCM_SHA384"])
    before = grade(facts).grade
    assert before == "B"
    rec = by_id(recommend(facts))["cipher.forward_secrecy"]
    assert "TLS_RSA_WITH_AES_128_GCM_SHA256" in rec.change and "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" in rec.change
    assert better(rec.predicted_grade, before)
    after = rec.apply(facts)
    assert {s.name for s in after.suites} == {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                                              "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                                              "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"}


def test_an_ecdsa_site_gets_ecdsa_suites_when_forward_secrecy_is_added():
    facts = make_facts(protocols=("TLSv1.2",), suites=["TLS_RSA_WITH_AES_128_GCM_SHA256"], cert=ec_cert())
    after = by_id(recommend(facts))["cipher.forward_secrecy"].apply(facts)
    assert all("_ECDHE_ECDSA_" in s.name for s in after.suites)


def test_predict_all_brings_a_legacy_site_to_a_plus_and_intermediate_compliance():
    facts = legacy_site()
    assert grade(facts).grade == "C"
    after, result = predict_all(facts)
    assert result.grade in ("A", "A+")
    assert result.grade == "A+" and result.caps == [] and result.warnings == []
    assert check_profile(after, "intermediate") == {}
    assert grade_after(facts, [r for r in recommend(facts) if r.kind == "security"]).grade == result.grade


def test_the_legacy_site_gets_one_recommendation_per_problem_in_priority_order():
    recs = recommend(legacy_site())
    ids = [r.id for r in recs]
    assert ids[:ids.index("hsts.enable") + 1] == [
        "proto.disable_legacy", "cipher.disable_insecure", "cipher.disable_64bit", "cipher.forward_secrecy",
        "cipher.match_profile", "kx.dh_2048", "tls.disable_compression", "tls.renegotiation", "cert.fix_chain",
        "proto.enable_tls13", "hsts.enable"]
    assert {r.id for r in recs if r.kind == "performance"} == {"perf.ecdsa", "perf.session_resumption"}
    # security first, then performance
    kinds = [r.kind for r in recs]
    assert kinds == sorted(kinds, key=lambda k: k != "security")
    legacy = by_id(recs)["proto.disable_legacy"]
    assert legacy.title == "Disable SSL 3.0, TLS 1.0 and TLS 1.1"
    insecure = by_id(recs)["cipher.disable_insecure"]
    assert insecure.change.startswith("Remove this suite: TLS_RSA_WITH_RC4_128_SHA")


def test_a_weak_dh_group_is_replaced_by_ffdhe2048_in_the_prediction():
    facts = make_facts(suites=suites_for(MODERN_PROTOCOLS)
                       + [suite("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=1024)])
    assert grade(facts).grade == "B"
    rec = by_id(recommend(facts))["kx.dh_2048"]
    assert "ffdhe2048" in rec.change and rec.change.startswith("Drop the DHE suites") and "since 6.0" in rec.change
    assert "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256" in by_id(recommend(facts))["cipher.match_profile"].change
    assert rec.predicted_grade == "A+"
    assert {s.kx_bits for s in rec.apply(facts).suites if s.kx_type == "DH"} == {2048}


@pytest.mark.parametrize("hsts_max_age, hsts_valid, before", [(None, True, "A"), (86400, True, "A"),
                                                              (0, True, "A-"), (None, False, "A-")])
def test_missing_short_or_broken_hsts_gets_a_header_that_earns_a_plus(hsts_max_age, hsts_valid, before):
    facts = make_facts(hsts_max_age=hsts_max_age, hsts_valid=hsts_valid)
    assert grade(facts).grade == before
    rec = by_id(recommend(facts))["hsts.enable"]
    assert "max-age ≥ 15552000" in rec.change
    assert rec.predicted_grade == "A+"
    assert rec.apply(facts).hsts.max_age == 31536000


def test_a_tls12_only_site_is_told_to_enable_tls13_with_its_three_suites():
    facts = make_facts(protocols=("TLSv1.2",))
    assert grade(facts).grade == "A-"
    rec = by_id(recommend(facts))["proto.enable_tls13"]
    assert rec.predicted_grade == "A+"
    assert [s.name for s in rec.apply(facts).suites_for("TLSv1.3")] == list(INTERMEDIATE.ciphersuites)
    assert "one round trip" in rec.impact


def test_an_expired_certificate_is_renewed_and_the_t_grade_goes_away():
    facts = make_facts(cert=rsa_cert(not_before=NOW - timedelta(days=120), not_after=NOW - timedelta(days=30)))
    assert grade(facts).grade == "T"
    rec = by_id(recommend(facts))["cert.replace"]
    assert rec.title == "Renew the certificate"
    assert rec.predicted_grade == "A+"
    assert "it has expired" in rec.why and "2026-01-31" not in rec.why  # the finding gives the date


def test_a_public_certificate_valid_too_long_is_replaced_and_a_private_one_is_not():
    """#28 item 6: the lifetime finding is high only under a public root, and then it has a fix."""
    long_lived = rsa_cert(not_after=NOW + timedelta(days=796))
    rec = by_id(recommend(make_facts(cert=long_lived)))["cert.replace"]
    assert "valid for 826 days, more than the 398 browsers accept from a public CA" in rec.why
    assert "cert.lifetime" in rec.fixes
    private = make_facts(cert=deployment(long_lived, trusted=False, custom_ca=True), trust_use_custom_ca=True)
    assert "cert.replace" not in by_id(recommend(private))


def test_an_extra_certificate_is_named_in_the_chain_fix_and_gone_in_the_prediction():
    facts = make_facts(cert=replace(deployment(), chain_extra=("CN=Stray CA",)))
    rec = by_id(recommend(facts))["cert.fix_chain"]
    assert "remove CN=Stray CA from the file" in rec.change and "a certificate that no client needs" in rec.why
    assert rec.apply(facts).certificates[0].chain_extra == () and "cert.chain_extra" in rec.fixes


def test_stapling_is_advised_only_for_a_certificate_that_names_an_ocsp_responder():
    """#29 item 5: nginx staples nothing for a leaf without an OCSP URL (Let's Encrypt's since 2025)."""
    crl_only = make_facts(cert=deployment(rsa_cert(ocsp_urls=()), ocsp_stapled=Check(BAD)))
    assert "cert.ocsp_stapling" not in by_id(recommend(crl_only))
    with_responder = make_facts(cert=deployment(rsa_cert(ocsp_urls=("http://ocsp.test/",)), ocsp_stapled=Check(BAD)))
    assert "cert.ocsp_stapling" in by_id(recommend(with_responder))
    broken = make_facts(cert=deployment(rsa_cert(ocsp_urls=()), must_staple=True, ocsp_stapled=Check(BAD)))
    rec = by_id(recommend(broken))["cert.replace"]
    assert "must-staple) yet names no OCSP responder" in rec.why and "cert.ocsp_stapling" not in by_id(recommend(broken))


def test_a_mismatched_self_signed_certificate_is_replaced():
    facts = make_facts(cert=deployment(rsa_cert(self_signed=True, san=("www.example.org",)), hostname_matches=False))
    rec = by_id(recommend(facts))["cert.replace"]
    assert rec.title == "Replace the certificate"
    assert "it does not cover localhost" in rec.why and "it is self-signed" in rec.why
    assert rec.predicted_grade == "A+"


def test_heartbleed_and_robot_get_their_own_fixes():
    facts = make_facts(suites=suites_for(MODERN_PROTOCOLS) + [suite("TLS_RSA_WITH_AES_128_GCM_SHA256")],
                       heartbleed=BAD, robot=Check(BAD, value="VULNERABLE_STRONG_ORACLE"))
    recs = by_id(recommend(facts))
    assert recs["vuln.heartbleed"].predicted_grade == "F"  # ROBOT still there
    assert recs["vuln.robot"].predicted_grade == "F"       # Heartbleed still there
    assert "TLS_RSA_WITH_AES_128_GCM_SHA256" in recs["vuln.robot"].change
    assert grade_after(facts, [recs["vuln.heartbleed"], recs["vuln.robot"]]).grade == "A+"


def test_server_order_is_recommended_when_weak_suites_meet_client_order():
    facts = make_facts(suites=suites_for(MODERN_PROTOCOLS) + [suite("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")],
                       preferences=[preference("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", enforced=False)])
    rec = by_id(recommend(facts))["cipher.server_order"]
    after = rec.apply(facts).preferences["TLSv1.2"]
    assert after.enforced and after.order[-1] == "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"
    assert after.order[0] in INTERMEDIATE.ciphers_iana


def test_tls10_and_3des_go_whatever_profile_is_asked_for_now_that_old_is_withdrawn():
    facts = tls10_site(suites=suites_for(ALL_TLS) + [suite("TLS_RSA_WITH_3DES_EDE_CBC_SHA", "TLSv1.0")])
    for profile in PROFILES:
        assert {"proto.disable_legacy", "cipher.disable_64bit"} <= {r.id for r in recommend(facts, profile)}
    with pytest.raises(ValueError, match="unknown Mozilla profile 'old'"):
        recommend(facts, "old")


@pytest.mark.parametrize("facts, rec_id, kind", [
    (make_facts(), "perf.ecdsa", "performance"),
    (make_facts(session_id_resumption=BAD, session_ticket_resumption=BAD), "perf.session_resumption", "performance"),
    (replace(make_facts(), alpn=["http/1.1"]), "perf.http2", "performance"),
    (make_facts(), "perf.hsts_preload", "performance"),
    (make_facts(cert=deployment(ocsp_stapled=Check(BAD))), "cert.ocsp_stapling", "performance"),
    (make_facts(cert=deployment(ocsp_stapled=Check(BAD), must_staple=True)), "cert.ocsp_stapling", "security"),
])
def test_performance_advice_comes_from_measured_facts(facts, rec_id, kind):
    rec = by_id(recommend(facts))[rec_id]
    assert rec.kind == kind
    assert rec.impact and rec.change


def test_performance_changes_are_applied_to_the_prediction_too():
    facts = replace(make_facts(session_id_resumption=BAD, session_ticket_resumption=BAD), alpn=["http/1.1"])
    recs = by_id(recommend(facts))
    assert recs["perf.http2"].apply(facts).alpn[0] == "h2"
    assert recs["perf.session_resumption"].apply(facts).check("session_id_resumption").status == OK
    ecdsa = recs["perf.ecdsa"].apply(facts)
    assert [d.leaf.key_type for d in ecdsa.certificates] == ["RSA", "EC"]
    preload = recs["perf.hsts_preload"].apply(facts).hsts
    assert (preload.max_age, preload.include_subdomains, preload.preload) == (63072000, True, True)


def test_an_a_plus_ecdsa_site_gets_no_security_advice():
    facts = make_facts(cert=ec_cert())
    assert grade(facts).grade == "A+"
    assert [r for r in recommend(facts) if r.kind == "security"] == []


def test_recommendations_serialise_to_json():
    for rec in recommend(legacy_site()):
        data = json.loads(json.dumps(rec.to_dict()))
        assert set(data) == {"id", "title", "why", "change", "kind", "impact", "predicted_grade", "fixes"}
        assert data["kind"] in ("security", "performance") and data["predicted_grade"] in GRADES + ("T", "M")


# --- snippets ---------------------------------------------------------------------------------

SNIPPET_ROWS = [
    ("intermediate", "nginx", ["ssl_protocols TLSv1.2 TLSv1.3;", "ssl_prefer_server_ciphers off;",
                               "ssl_ciphers " + ":".join(INTERMEDIATE.ciphers_openssl) + ";",
                               "ssl_session_tickets off;", "ssl_session_cache shared:MozSSL:10m;",
                               "ssl_stapling on;", 'add_header Strict-Transport-Security "max-age=63072000" always;',
                               "ssl_ecdh_curve X25519MLKEM768:X25519:prime256v1:secp384r1;",
                               "# ssl_ecdh_curve X25519:prime256v1:secp384r1;", "OpenSSL 3.5+",
                               "ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                               "TLS_CHACHA20_POLY1305_SHA256;"], ["TLSv1.1", "DES-CBC3-SHA", ":DHE-RSA", "ssl_dhparam", "ffdhe2048"]),
    ("modern", "nginx", ["ssl_protocols TLSv1.3;", "ssl_prefer_server_ciphers off;"], ["ssl_ciphers", "ssl_dhparam"]),
    ("intermediate", "apache", ["SSLProtocol             -all +TLSv1.2 +TLSv1.3", "SSLHonorCipherOrder     off",
                                "SSLSessionTickets       off", "SSLUseStapling On",
                                'Header always set Strict-Transport-Security "max-age=63072000"',
                                "SSLCipherSuite          TLSv1.3 TLS_AES_128_GCM_SHA256",
                                "SSLCipherSuite          " + ":".join(INTERMEDIATE.ciphers_openssl),
                                "SSLOpenSSLConfCmd       Curves X25519MLKEM768:X25519:prime256v1:secp384r1",
                                "# SSLOpenSSLConfCmd       Curves X25519:prime256v1:secp384r1"],
     ["TLSv1.1", "DHParameters"]),
    ("modern", "apache", ["SSLProtocol             -all +TLSv1.3"], ["DHParameters"]),
    ("intermediate", "haproxy", ["ssl-default-bind-ciphers " + ":".join(INTERMEDIATE.ciphers_openssl),
                                 "ssl-default-bind-ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                                 "TLS_CHACHA20_POLY1305_SHA256",
                                 "ssl-default-bind-options prefer-client-ciphers ssl-min-ver TLSv1.2 no-tls-tickets",
                                 "ssl-default-bind-curves X25519MLKEM768:X25519:prime256v1:secp384r1",
                                 "alpn h2,http/1.1",
                                 "http-response set-header Strict-Transport-Security max-age=63072000"],
     ["ssl-dh-param-file"]),
    ("modern", "haproxy", ["ssl-min-ver TLSv1.3"], ["ssl-default-bind-ciphers "]),
    ("intermediate", "caddy", ["protocols tls1.2 tls1.3", "ciphers " + " ".join(INTERMEDIATE.ciphers_iana),
                               "curves x25519mlkem768 x25519 secp256r1 secp384r1", "Caddy 2.10+",
                               'header Strict-Transport-Security "max-age=63072000"'], ["TLS_DHE_"]),
    ("modern", "caddy", ["protocols tls1.3\n"], ["ciphers"]),
]


@pytest.mark.parametrize("profile, server, present, absent", SNIPPET_ROWS, ids=lambda v: str(v)[:20])
def test_each_snippet_has_the_profiles_directives(profile, server, present, absent):
    text = config_snippets(profile)[server]
    for needle in present:
        assert needle in text, f"{profile}/{server} lacks {needle!r}"
    for needle in absent:
        assert needle not in text, f"{profile}/{server} has {needle!r}"


def test_snippets_cover_every_server_and_profile_with_the_scanned_host():
    for profile in (MODERN, INTERMEDIATE):
        snippets = config_snippets(profile.name, make_facts(host="shop.example.com"))
        assert set(snippets) == set(SERVERS) == {"nginx", "apache", "haproxy", "caddy"}
        assert "server_name shop.example.com;" in snippets["nginx"]
        assert "ServerName shop.example.com" in snippets["apache"]
        assert snippets["caddy"].count("{") == snippets["caddy"].count("}")
        assert snippets["nginx"].count("{") == snippets["nginx"].count("}")


def test_a_modern_snippet_warns_an_rsa_site_that_it_needs_ecdsa():
    note = "NOTE: the modern profile needs an ECDSA certificate; localhost serves RSA."
    assert all(note in text for text in config_snippets("modern", make_facts()).values())
    assert not any("NOTE" in text for text in config_snippets("modern", make_facts(cert=ec_cert())).values())


def test_a_cap_lifted_while_another_keeps_the_grade_says_which_one_keeps_it():
    """Issue 17: "lifts the B cap" beside "grade after this change: B" read as a contradiction."""
    facts = make_facts(protocols=("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3"), cert=deployment(chain_complete=False))
    assert grade(facts).grade == "B"
    chain = by_id(recommend(facts))["cert.fix_chain"]
    assert chain.predicted_grade == "B"
    assert "lifts the B cap" in chain.impact
    assert "The grade stays B until the other caps go too: TLS 1.0 and TLS 1.1 are supported" in chain.impact


def test_a_recommendation_says_each_reason_once():
    facts = make_facts(cert=deployment(rsa_cert(not_after=NOW - timedelta(days=31))))
    why = by_id(recommend(facts))["cert.replace"].why
    assert why.count("has expired") == 1 and ".." not in why


@pytest.mark.parametrize("pq, says", [
    (PostQuantum(Check(OK), accepted=("X25519MLKEM768",)), "already negotiates X25519MLKEM768: its TLS library has it"),
    (PostQuantum(Check(BAD), rejected=("X25519MLKEM768",)), "does not negotiate X25519MLKEM768 today"),
    (None, None),
])
def test_each_snippet_says_what_the_scan_showed_of_the_hybrid_group(pq, says):
    snippets = config_snippets("intermediate", replace(make_facts(host="shop.example.com"), post_quantum=pq))
    for server in ("nginx", "apache", "haproxy", "caddy"):
        text = snippets[server]
        assert ("X25519MLKEM768" in text or "x25519mlkem768" in text)
        if says:
            assert f"shop.example.com {says}" in text, server
        else:
            assert "negotiate" not in text, server
