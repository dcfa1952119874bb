"""Each recommendation's effect on a visitor's time (#26 item 6): round trips at the measured RTT, the
site's own measurements where they exist, estimates labelled as such."""

import pytest

from tlsaudit.domain.visitor_time import ESTIMATED, MEASURED, NONE, SiteTimings, effect_of

PROBED = SiteTimings(rtt_ms=52.0, rtt_source="browser probe #7", redirect_ms=108.4, page_requests=20,
                     page_protocol="http/1.1", probe_source="browser probe #7")


def test_tls13_saves_one_round_trip_per_new_connection_at_the_measured_rtt():
    effect = effect_of("proto.enable_tls13", PROBED)

    assert effect.ms == -52.0 and effect.per == "new connection"
    assert "−52 ms: 1 round trip at the 52.0 ms RTT measured by browser probe #7" in effect.text


def test_tls13_is_measured_when_the_sites_own_tls12_handshakes_were_timed():
    timings = SiteTimings(rtt_ms=50.0, rtt_source="handshake run #3", tls12_full_ms=101.7,
                          handshake_source="handshake run #3, 1 agents")
    effect = effect_of("proto.enable_tls13", timings)

    assert effect.basis == MEASURED and "TLS 1.2 full handshakes take 101.7 ms" in effect.text


def test_without_a_measured_rtt_the_figure_is_an_estimate_in_round_trips_that_says_what_would_measure_it():
    effect = effect_of("perf.session_resumption", SiteTimings())

    assert effect.ms is None and effect.basis == ESTIMATED
    assert "1 round trip" in effect.text and "a browser probe measures" in effect.text


def test_on_loopback_the_figure_adds_a_visitor_farther_away():
    effect = effect_of("proto.enable_tls13", SiteTimings(rtt_ms=0.08, rtt_source="browser probe #1"))

    assert effect.ms == pytest.approx(-0.08)
    assert "a visitor 100 ms away: −100 ms" in effect.text


def test_hsts_saves_the_redirect_the_probe_measured():
    effect = effect_of("hsts.enable", PROBED)

    assert (effect.ms, effect.basis, effect.per) == (-108.4, MEASURED, "visit that starts on plain HTTP")
    assert "after the first" in effect.text and "browser probe #7" in effect.text
    assert "the first one included" in effect_of("perf.hsts_preload", PROBED).text


def test_hsts_without_a_measured_redirect_is_two_round_trips_estimated():
    effect = effect_of("hsts.enable", SiteTimings(rtt_ms=50.0, rtt_source="load run #2"))

    assert (effect.ms, effect.basis) == (-100.0, ESTIMATED)


def test_http2_counts_the_waves_of_six_requests_the_page_waits_for():
    effect = effect_of("perf.http2", PROBED)    # 20 requests: the document, then 19 in 4 waves of 6

    assert effect.ms == -3 * 52.0 and "4 waves of 6" in effect.text
    few = effect_of("perf.http2", SiteTimings(rtt_ms=50.0, rtt_source="x", page_requests=5, probe_source="probe #1"))
    assert few.basis == NONE and few.ms == 0.0


@pytest.mark.parametrize("rec_id", ["proto.disable_legacy", "cipher.disable_insecure", "cipher.server_order",
                                    "vuln.robot", "kx.curves"])
def test_changes_that_keep_the_round_trips_say_so(rec_id):
    effect = effect_of(rec_id, PROBED)

    assert (effect.ms, effect.basis) == (0.0, NONE) and effect.text.startswith("No change to a visitor's time")


@pytest.mark.parametrize("rec_id", ["cert.ocsp_stapling", "cert.fix_chain"])
def test_a_wait_on_the_cas_server_is_not_priced_at_this_sites_rtt(rec_id):
    effect = effect_of(rec_id, PROBED)

    assert effect.ms is None and effect.basis == ESTIMATED and "CA" in effect.text


def test_every_figure_saves_time_or_costs_it_with_the_sign_its_words_say():
    for rec_id in ("proto.enable_tls13", "perf.session_resumption", "perf.ecdsa", "hsts.enable", "perf.http2"):
        effect = effect_of(rec_id, PROBED)
        assert effect.ms < 0 and "−" in effect.text, rec_id
    dh = effect_of("kx.dh_2048", PROBED)
    assert dh.ms > 0 and "slower" in dh.text
