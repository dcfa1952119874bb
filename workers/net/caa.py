"""The site's CAA records (RFC 8659) as a CA sees them: the CAA RRset of the host name, else of its parent,
climbing to the name below the top-level domain; the first name that has one holds the relevant set.
Asked of settings.DNS_RESOLVER when set (tests run a DNS server on 127.0.0.1), else the system's resolvers,
within a deadline. A name that no public CA can be asked about (an IP address, localhost, a special-use
domain of RFC 6761) is not looked up."""

from __future__ import annotations

import ipaddress
import time

from tlsaudit.domain.scanfacts import CaaFacts, CaaRecord

SPECIAL_USE = ("localhost", "test", "invalid", "local", "example", "internal", "home.arpa", "onion",
               "example.com", "example.net", "example.org")   # RFC 2606's too: no CA issues for them
QUERY_TIMEOUT_S = 2.0
MAX_RECORDS, MAX_TAG, MAX_VALUE = 50, 32, 255     # what a report quotes of a hostile zone


def skip_reason(host: str) -> str:
    name = host.rstrip(".").lower()
    try:
        ipaddress.ip_address(name)
        return "the site is an IP address: CAA applies to host names"
    except ValueError:
        pass
    if "." not in name or any(name == s or name.endswith("." + s) for s in SPECIAL_USE):
        return f"{name} is a special-use name (RFC 6761): no public CA issues for it"
    return ""


def names_to_ask(host: str) -> list[str]:
    """The host name and its parents, down to the name just below the top-level domain."""
    labels = host.rstrip(".").lower().split(".")
    return [".".join(labels[i:]) for i in range(len(labels) - 1)]


def look_up_caa(host: str, resolver: tuple[str, int] | None, timeout_s: float) -> CaaFacts:
    """Never raises: a failed lookup comes back with `error` (CAs refuse to issue on a DNS error too)."""
    why = skip_reason(host)
    if why:
        return CaaFacts(queried=(), records=(), skipped=why)
    deadline = time.monotonic() + timeout_s
    queried = []
    for name in names_to_ask(host):
        queried.append(name)
        left = deadline - time.monotonic()
        if left <= 0:
            return CaaFacts(tuple(queried), (), error=f"the CAA lookups did not finish within {timeout_s:g} s")
        try:
            records = query_caa(name, resolver, min(left, QUERY_TIMEOUT_S))
        except LookupFailed as exc:
            return CaaFacts(tuple(queried), (), error=f"the CAA lookup of {name} failed: {exc}")
        if records:
            return CaaFacts(tuple(queried), tuple(CaaRecord(name, flags, tag, value) for flags, tag, value in records))
    return CaaFacts(tuple(queried), ())


class LookupFailed(Exception):
    pass


def query_caa(name: str, resolver: tuple[str, int] | None, timeout_s: float) -> list[tuple[int, str, str]]:
    """(flags, tag, value) of `name`'s CAA RRset; [] for none (NOERROR without one, or NXDOMAIN)."""
    import dns.exception
    import dns.message
    import dns.query
    import dns.rcode
    import dns.rdatatype
    import dns.resolver

    try:
        if resolver is not None:
            # EDNS for a large RRset, and TCP when the answer still comes back truncated: a cut CAA set read as
            # "no records" would say any CA may issue.
            query = dns.message.make_query(name, dns.rdatatype.CAA, use_edns=0, payload=4096)
            response, _ = dns.query.udp_with_fallback(query, resolver[0], timeout=timeout_s, port=resolver[1])
            if response.rcode() == dns.rcode.NXDOMAIN:
                return []
            if response.rcode() != dns.rcode.NOERROR:
                raise LookupFailed(f"the DNS server answered {dns.rcode.to_text(response.rcode())}")
            rrsets = [r for r in response.answer if r.rdtype == dns.rdatatype.CAA]
        else:
            answer = dns.resolver.Resolver().resolve(name, "CAA", lifetime=timeout_s, raise_on_no_answer=False)
            rrsets = [answer.rrset] if answer.rrset is not None else []
    except dns.resolver.NXDOMAIN:
        return []
    except dns.exception.Timeout:
        raise LookupFailed(f"no answer within {timeout_s:g} s") from None
    except (dns.exception.DNSException, OSError) as exc:
        raise LookupFailed(f"{type(exc).__name__}: {exc}") from None
    return [(r.flags, r.tag.decode("ascii", "replace")[:MAX_TAG], r.value.decode("utf-8", "replace")[:MAX_VALUE])
            for rrset in rrsets for r in list(rrset)[:MAX_RECORDS]]
