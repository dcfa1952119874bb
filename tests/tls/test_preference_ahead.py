"""Issue #16 item 3: the suite preference observed beside sslyze, before its accepted suites are known,
gives exactly the answer of the probe run after it over those suites, or none (the probe then runs)."""

from dataclasses import replace

from tests.tls.test_tls13_preference import SERVER_ORDER as TLS13_ORDER
from tests.tls.test_tls13_preference import TLS13_ONLY
from tests.tls.test_tls13_preference import suites as tls13_suites
from tests.tls.test_tls_probes import CIPHER_STRING, SERVER_ORDER, suites
from workers.tls import probes, tls13

# What sslyze reports as accepted, in its order (IANA names descending), as facts.accepted_suites keeps it.
ACCEPTED = suites(sorted(SERVER_ORDER, reverse=True))
TLS13_ACCEPTED = tls13_suites(sorted(TLS13_ORDER, reverse=True))


def endpoint(port: int) -> probes.Endpoint:
    return probes.Endpoint(host="localhost", ip="127.0.0.1", port=port, timeout=3.0)


def both_answers(port: int, protocol: str = "TLSv1.2", accepted=ACCEPTED):
    observation = probes.observe_preference(endpoint(port), protocol)
    return (probes.preference_observed(observation, protocol, accepted),
            probes.probe_preference(endpoint(port), protocol, accepted))


def test_it_reads_an_enforced_order_exactly_as_the_probe_does(s_server):
    port = s_server("-serverpref", "-cipher", CIPHER_STRING)
    observed, probed = both_answers(port)
    assert observed == probed
    assert observed.enforced is True and observed.order == tuple(iana for iana, _ in SERVER_ORDER)


def test_it_sees_a_server_that_follows_the_client_as_the_probe_does(s_server):
    port = s_server("-cipher", CIPHER_STRING)
    observed, probed = both_answers(port)
    assert observed == probed and observed.enforced is False


def test_suites_python_cannot_offer_go_last_with_the_probes_note(s_server):
    port = s_server("-serverpref", "-cipher", CIPHER_STRING)
    legacy = suites([("TLS_RSA_EXPORT_WITH_RC4_40_MD5", "EXP-RC4-MD5")])    # removed from OpenSSL 3
    observed, probed = both_answers(port, accepted=legacy + ACCEPTED)
    assert observed == probed and "cannot offer" in observed.reason


def test_it_reads_a_tls13_order_and_a_tls13_follower_as_the_probe_does(s_server):
    for args in (("-serverpref", *TLS13_ONLY), TLS13_ONLY):
        port = s_server(*args)
        observed = tls13.tls13_preference_observed(tls13.observe_tls13_preference(endpoint(port)), TLS13_ACCEPTED)
        assert observed == tls13.probe_tls13_preference(endpoint(port), TLS13_ACCEPTED)
    assert observed.enforced is False


def test_a_protocol_the_server_refuses_gives_no_observation(s_server):
    port = s_server("-tls1_2", "-cipher", CIPHER_STRING)
    assert probes.observe_preference(endpoint(port), "TLSv1.1") is None


def test_a_dead_port_gives_no_observation(closed_port):
    assert probes.observe_preference(endpoint(closed_port), "TLSv1.2") is None
    assert tls13.observe_tls13_preference(endpoint(closed_port)) is None


# --- observations that must not be trusted: the probe runs instead ---------------------------------

ENFORCED = probes.PreferenceObservation(
    offered=probes.offer_order("TLSv1.2"), first=SERVER_ORDER[0][1], second=SERVER_ORDER[0][1],
    chain=tuple(openssl for _, openssl in SERVER_ORDER))


def test_the_observation_itself_is_trusted_when_it_covers_the_accepted_suites():
    assert probes.preference_observed(ENFORCED, "TLSv1.2", ACCEPTED).order == tuple(n for n, _ in SERVER_ORDER)


def test_a_chain_that_stopped_before_every_accepted_suite_is_not_trusted():
    cut = replace(ENFORCED, chain=ENFORCED.chain[:2])  # a failure mid-way: the probe words the gap itself
    assert probes.preference_observed(cut, "TLSv1.2", ACCEPTED) is None


def test_a_chain_with_a_suite_sslyze_did_not_find_accepted_is_not_trusted():
    stray = replace(ENFORCED, chain=(*ENFORCED.chain, "ECDHE-RSA-AES128-SHA"))
    assert probes.preference_observed(stray, "TLSv1.2", ACCEPTED) is None
    assert probes.preference_observed(ENFORCED, "TLSv1.2", ACCEPTED[:3]) is None


def test_a_server_that_followed_neither_order_is_left_to_the_probe():
    neither = replace(ENFORCED, first=SERVER_ORDER[1][1], second=SERVER_ORDER[2][1], chain=())
    assert probes.preference_observed(neither, "TLSv1.2", ACCEPTED) is None


def test_an_offer_in_another_order_than_sslyzes_is_not_trusted():
    follower = replace(ENFORCED, first=ACCEPTED[0].openssl_name, second=ACCEPTED[-1].openssl_name, chain=())
    assert probes.preference_observed(follower, "TLSv1.2", ACCEPTED).enforced is False
    shuffled = replace(follower, offered=tuple(reversed(follower.offered)))
    assert probes.preference_observed(shuffled, "TLSv1.2", ACCEPTED) is None
    assert probes.preference_observed(follower, "TLSv1.2", list(reversed(ACCEPTED))) is None


def test_no_observation_or_a_single_accepted_suite_is_left_to_the_probe():
    assert probes.preference_observed(None, "TLSv1.2", ACCEPTED) is None
    assert probes.preference_observed(ENFORCED, "TLSv1.2", ACCEPTED[:1]) is None
    assert tls13.tls13_preference_observed(None, TLS13_ACCEPTED) is None
    tls13_chain = probes.PreferenceObservation(tuple(sorted(TLS13_ORDER, reverse=True)), TLS13_ORDER[0],
                                               TLS13_ORDER[0], TLS13_ORDER[:2])
    assert tls13.tls13_preference_observed(tls13_chain, TLS13_ACCEPTED) is None
