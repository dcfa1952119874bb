"""Nightly slots: where in an organization's window each site's scheduled audit starts.

Beat fires a site's entry at second 0 of its minute, so what the worker pool sees is the number of
audits started per minute. Each minute of the window holds at most `capacity` starts (what the pool
finishes in a minute, settings.NIGHTLY_MAX_STARTS_PER_MINUTE). A site's preferred minute comes from a
stable hash of its id (the same on every machine and run, unlike Python's salted hash()): the less
loaded of two such minutes, which keeps every minute near the average; when both are full the site
takes the next minute with room (wrapping to the window's start). Sites are placed in id order, so a
new site (a higher id) never moves an existing one: it only takes a free place. When the window has fewer places than sites, the extra
sites go to the least-loaded minutes and `window_verdict` says so in words: never silent bunching.

Pure: no Django. Slots are minute offsets from the window's start; `clock` turns one into (hour, minute).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field


def window_minutes(hours: list[int]) -> int:
    return len(hours) * 60


def clock(hours: list[int], offset: int) -> tuple[int, int]:
    """The UTC (hour, minute) of a minute offset into the window (hours as OrgSchedulePolicy.hours())."""
    return hours[offset // 60], offset % 60


def offset_of(hours: list[int], hour: int, minute: int) -> int | None:
    """The minute offset of (hour, minute) in the window, None when it lies outside."""
    return hours.index(hour) * 60 + minute if hour in hours else None


def preferred(site_id: int, minutes: int, choice: int = 0) -> int:
    """A stable, evenly spread minute for a site (its first or second choice): sha256 of its id, not
    hash(), which Python salts per process."""
    digest = hashlib.sha256(f"nightly:{site_id}".encode()).digest()
    return int.from_bytes(digest[8 * choice:8 * choice + 8], "big") % minutes


def second_of_minute(site_id: int) -> int:
    """The second (0-59) at which the site's scheduled audit starts within its minute: beat fires every
    entry at second 0, as does every other cron job on the internet; a stable second per site spreads
    the minute's starts over it (and the audited servers see the same time every night)."""
    digest = hashlib.sha256(f"second:{site_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 60


def address_capacity(audit_seconds: int, audits_per_ip: int = 1) -> int:
    """Scheduled starts per minute one IP address takes: its audits run one at a time in the fleet,
    each about `audit_seconds`, so more starts in a minute only queue up behind each other."""
    return max(1, 60 * audits_per_ip // audit_seconds)


@dataclass
class AddressLoad:
    """Starts per (address, minute) so far, and how many one address takes per minute."""
    per_minute: int
    starts: Counter = field(default_factory=Counter)

    def has_room(self, address: str | None, minute: int) -> bool:
        return address is None or self.starts[address, minute] < self.per_minute

    def add(self, address: str | None, minute: int) -> None:
        if address is not None:
            self.starts[address, minute] += 1


def place(site_id: int, load: Counter, minutes: int, capacity: int, *, address: str | None = None,
          addresses: AddressLoad | None = None) -> int:
    """The site's minute: the less loaded of its two hashed choices (two choices keep the busiest minute
    near the average where one would leave random clumps), else the next minute with room after the
    first; with none left, the least loaded (nearest after the first choice). A minute has room when it
    holds fewer than `capacity` starts and, for a site whose IP address is known, fewer than that address
    takes (`addresses`: sites on one address are spread so they need not wait for each other). Records it."""
    addresses = addresses or AddressLoad(per_minute=capacity)

    def has_room(minute: int) -> bool:
        return load[minute] < capacity and addresses.has_room(address, minute)

    def take(minute: int) -> int:
        load[minute] += 1
        addresses.add(address, minute)
        return minute

    first, second = preferred(site_id, minutes), preferred(site_id, minutes, 1)
    best = second if load[second] < load[first] else first
    if has_room(best):
        return take(best)
    for step in range(1, minutes):
        slot = (first + step) % minutes
        if has_room(slot):
            return take(slot)
    return take(min(range(minutes), key=lambda m: (addresses.starts[address, m], load[m], (m - first) % minutes)))


def plan(site_ids: Iterable[int], minutes: int, capacity: int, *, addresses_of: dict[int, str] | None = None,
         per_address_minute: int | None = None) -> dict[int, int]:
    """Every site's minute, placed in id order (so adding a site moves no other); with `addresses_of`,
    at most `per_address_minute` starts per minute on one address."""
    load: Counter = Counter()
    addresses = AddressLoad(per_minute=per_address_minute or capacity)
    addresses_of = addresses_of or {}
    return {site_id: place(site_id, load, minutes, capacity, address=addresses_of.get(site_id), addresses=addresses)
            for site_id in sorted(site_ids)}


@dataclass(frozen=True)
class AddressVerdict:
    """Whether the scheduled sites on one IP address fit the window, audited one at a time."""
    address: str
    sites: int
    minutes: int          # in the window
    audit_seconds: int
    audits_per_ip: int = 1

    @property
    def minutes_needed(self) -> int:
        return math.ceil(self.sites * self.audit_seconds / self.audits_per_ip / 60)

    @property
    def fits(self) -> bool:
        return self.minutes_needed <= self.minutes

    def words(self) -> str:
        return (f"{self.sites} scheduled sites share {self.address}: audited one at a time (about "
                f"{self.audit_seconds} s each, to stay polite to that address), they need "
                f"{in_hours(self.minutes_needed)} and the window has {in_hours(self.minutes)}. The last ones would "
                f"wait for their turn past the window: widen the window, or turn some of them off or to weekly "
                f"and leave the rest nightly.")


def in_hours(minutes: int) -> str:
    return f"{minutes} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def crowded_addresses(sites_per_address: dict[str, int], minutes: int, audit_seconds: int,
                      audits_per_ip: int = 1) -> list[AddressVerdict]:
    """The addresses whose scheduled sites do not fit the window, the most crowded first."""
    verdicts = [AddressVerdict(address, n, minutes, audit_seconds, audits_per_ip) for address, n in
                sorted(sites_per_address.items(), key=lambda item: (-item[1], item[0]))]
    return [verdict for verdict in verdicts if not verdict.fits]


@dataclass(frozen=True)
class Verdict:
    sites: int
    capacity: int  # starts per minute
    minutes: int  # in the window
    busiest: int  # starts in the busiest minute

    @property
    def places(self) -> int:
        return self.capacity * self.minutes

    @property
    def fits(self) -> bool:
        return self.sites <= self.places and self.busiest <= self.capacity

    @property
    def hours_needed(self) -> int:
        return math.ceil(self.sites / self.capacity / 60)

    def words(self) -> str:
        if self.fits:
            return (f"{self.sites} scheduled site(s); the window holds {self.places} audit starts "
                    f"({self.capacity} per minute), busiest minute {self.busiest}.")
        if self.sites > self.places:
            return (f"Too many sites for the window: {self.sites} scheduled sites need {self.hours_needed} "
                    f"hour(s) at {self.capacity} audit starts per minute, the window has {self.minutes // 60}. "
                    f"Up to {self.busiest} audits start in one minute and wait for the worker pool: widen the "
                    f"window or add worker capacity (NIGHTLY_MAX_STARTS_PER_MINUTE).")
        return (f"Up to {self.busiest} audits start in one minute, more than the {self.capacity} the worker "
                f"pool takes: save the window again to spread them.")


def window_verdict(sites: int, minutes: int, capacity: int, busiest: int) -> Verdict:
    return Verdict(sites=sites, capacity=capacity, minutes=minutes, busiest=busiest)

