"""Nightly slots for a 10,000-site organization: no minute over the pool's capacity, every site
inside the window, the same places on every run, and a new site moves nobody."""

from collections import Counter

import pytest

from tlsaudit.domain import nightly

SITES = range(1, 10_001)
EIGHT_HOURS = [22, 23, 0, 1, 2, 3, 4, 5]  # a window that wraps past midnight
CAPACITY = 32  # the default: 16 threads x 1 host x 60 s / 30 s


def starts_per_minute(slots: dict[int, int]) -> Counter:
    return Counter(slots.values())


def test_ten_thousand_sites_never_start_more_per_minute_than_the_pool_takes():
    minutes = nightly.window_minutes(EIGHT_HOURS)
    slots = nightly.plan(SITES, minutes, CAPACITY)
    per_minute = starts_per_minute(slots)
    assert len(slots) == 10_000
    assert max(per_minute.values()) <= CAPACITY
    assert all(0 <= slot < minutes for slot in slots.values())
    # spread over the whole window, not packed at its start: 10,000 / 480 minutes is ~21 a minute
    assert len(per_minute) == minutes
    hours = Counter(nightly.clock(EIGHT_HOURS, slot)[0] for slot in slots.values())
    assert set(hours) == set(EIGHT_HOURS) and min(hours.values()) > 1_000
    # even: the two hashed choices keep every minute near the average (one choice left 7 to 32)
    assert max(per_minute.values()) - min(per_minute.values()) <= 6


def test_the_plan_is_the_same_on_every_run_whatever_the_order_given():
    minutes = nightly.window_minutes(EIGHT_HOURS)
    assert nightly.plan(SITES, minutes, CAPACITY) == nightly.plan(reversed(SITES), minutes, CAPACITY)
    # sha256, not Python's per-process salted hash(): a fixed value pins it across processes
    assert (nightly.preferred(1, 480), nightly.preferred(2, 480)) == (84, 308)


def test_adding_a_site_moves_no_other_and_removing_one_moves_few():
    minutes = nightly.window_minutes(EIGHT_HOURS)
    before = nightly.plan(SITES, minutes, CAPACITY)
    after = nightly.plan([*SITES, 10_001], minutes, CAPACITY)
    assert {k: v for k, v in after.items() if k != 10_001} == before
    without = nightly.plan([s for s in SITES if s != 5_000], minutes, CAPACITY)
    moved = sum(1 for site, slot in without.items() if before[site] != slot)
    # a new plan shifts a few later sites whose choice the freed place tipped; the database never
    # re-plans anyway (a deleted site's minute just gains room), so no stored site moves at all
    assert moved <= 100


def test_placing_one_site_at_a_time_gives_the_plan():
    """What ensure_schedule does (one new site against the stored load) equals the batch plan."""
    minutes, load = nightly.window_minutes(EIGHT_HOURS), Counter()
    one_by_one = {site: nightly.place(site, load, minutes, CAPACITY) for site in SITES}
    assert one_by_one == nightly.plan(SITES, minutes, CAPACITY)


def test_a_window_too_short_spreads_evenly_and_says_so():
    four_hours = [1, 2, 3, 4]
    minutes = nightly.window_minutes(four_hours)
    per_minute = starts_per_minute(nightly.plan(SITES, minutes, CAPACITY))
    # 7,680 places for 10,000 sites: every minute full, the rest shared out, never piled on one minute
    assert min(per_minute.values()) >= CAPACITY and max(per_minute.values()) <= 10_000 // minutes + 1
    verdict = nightly.window_verdict(sites=10_000, minutes=minutes, capacity=CAPACITY,
                                     busiest=max(per_minute.values()))
    assert not verdict.fits
    assert verdict.words().startswith("Too many sites for the window: 10000 scheduled sites need 6 hour(s) "
                                      "at 32 audit starts per minute, the window has 4.")


def test_a_window_that_fits_says_how_full_it_is():
    verdict = nightly.window_verdict(sites=10_000, minutes=480, capacity=32, busiest=32)
    assert verdict.fits and verdict.places == 15_360
    assert nightly.window_verdict(sites=10, minutes=480, capacity=32, busiest=40).fits is False


@pytest.mark.parametrize("hours, offset, expected", [([1, 2, 3, 4], 0, (1, 0)), ([1, 2, 3, 4], 239, (4, 59)),
                                                     ([23, 0], 61, (0, 1))])
def test_clock_and_offset_are_inverse(hours, offset, expected):
    assert nightly.clock(hours, offset) == expected
    assert nightly.offset_of(hours, *expected) == offset
    assert nightly.offset_of(hours, 12, 0) is None


def test_each_site_starts_at_a_stable_second_and_a_minutes_starts_spread_over_it():
    seconds = [nightly.second_of_minute(site) for site in SITES]
    per_second = Counter(seconds)
    assert set(per_second) == set(range(60))  # never all at second 0, as beat (and every cron) fires
    assert max(per_second.values()) < 2 * len(SITES) / 60
    # the ~20 sites of one minute do not clump either: at most a few share a second
    minute = [site for site, slot in nightly.plan(SITES, 480, CAPACITY).items() if slot == 0]
    assert len(minute) >= 15 and max(Counter(nightly.second_of_minute(site) for site in minute).values()) <= 3
    # sha256, not hash(): pinned values hold in every process, every night
    assert [nightly.second_of_minute(site) for site in (1, 2, 3)] == [48, 1, 17]


def test_an_address_takes_the_starts_its_audits_fit_one_at_a_time():
    assert [nightly.address_capacity(seconds) for seconds in (30, 60, 90, 5)] == [2, 1, 1, 12]
    assert nightly.address_capacity(30, audits_per_ip=2) == 4


def test_a_plan_spreads_one_address_and_leaves_the_others_as_they_were():
    ids = range(1, 201)
    shared = {site_id: "203.0.113.5" for site_id in range(1, 101)}
    without = nightly.plan(ids, minutes=60, capacity=10)
    with_addresses = nightly.plan(ids, minutes=60, capacity=10, addresses_of=shared, per_address_minute=2)

    per_minute = Counter(with_addresses[i] for i in shared)
    assert max(per_minute.values()) == 2 and len(per_minute) >= 50
    assert max(Counter(with_addresses.values()).values()) <= 10
    assert max(Counter(without[i] for i in shared).values()) > 2     # by time alone they bunch


def test_crowded_addresses_are_the_ones_that_do_not_fit_most_crowded_first():
    verdicts = nightly.crowded_addresses({"192.0.2.1": 130, "192.0.2.2": 120, "192.0.2.3": 500}, minutes=60,
                                         audit_seconds=30)
    assert [(v.address, v.sites) for v in verdicts] == [("192.0.2.3", 500), ("192.0.2.1", 130)]
    assert verdicts[0].words() == ("500 scheduled sites share 192.0.2.3: audited one at a time (about 30 s each, "
                                   "to stay polite to that address), they need 4.2 h and the window has 60 min. "
                                   "The last ones would wait for their turn past the window: widen the window, or "
                                   "turn some of them off or to weekly and leave the rest nightly.")
    # 90 s audits: 40 of them need the whole hour, whatever a minute's rounding says
    assert [v.sites for v in nightly.crowded_addresses({"192.0.2.4": 40, "192.0.2.5": 41}, 60, 90)] == [41]
