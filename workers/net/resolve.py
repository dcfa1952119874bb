"""Name resolution with a deadline, shared by the engines (scan and browser probe) and the web apps.

`resolve(name, timeout_s, resolver=None)`: the system resolver (getaddrinfo, in a daemon thread
because the C call cannot be interrupted) or, with `resolver` = (ip, port), A then AAAA records
asked of that DNS server (tests run one on 127.0.0.1). Addresses come unique, IPv4 first (like
sslyze: many networks still break IPv6). A failure raises `Unresolved(message, detail)` in a site
owner's words; callers re-raise it as a TargetError with the DNS code (workers/net/errors.py).
"""

from __future__ import annotations

import socket
import threading
import time


class Unresolved(Exception):
    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.message = message
        self.detail = detail


def resolve(name: str, timeout_s: float, resolver: tuple[str, int] | None = None, port: int | None = None) -> list[str]:
    if resolver is not None:
        return ask_dns_server(name, resolver, timeout_s)
    box: dict = {}
    thread = threading.Thread(target=_getaddrinfo_into, args=(box, name, port), daemon=True, name=f"resolve-{name}")
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise Unresolved(f"The DNS lookup for {name} did not answer within {timeout_s:g} s.")
    if "error" in box:
        raise Unresolved(f"The name {name} does not resolve (DNS lookup failed).", str(box["error"]))
    return _some(name, ipv4_first(box["infos"]))


def ask_dns_server(name: str, resolver: tuple[str, int], timeout_s: float) -> list[str]:
    """A, then AAAA records of `name` from the DNS server at `resolver`, within `timeout_s` in all."""
    import dns.exception
    import dns.resolver

    client = dns.resolver.Resolver(configure=False)
    client.nameservers, client.port, client.cache = [resolver[0]], resolver[1], None
    deadline = time.monotonic() + timeout_s
    addresses: list[str] = []
    for rdtype in ("A", "AAAA"):
        try:
            answer = client.resolve(name, rdtype, lifetime=max(0.1, deadline - time.monotonic()), search=False)
        except dns.resolver.NXDOMAIN:
            raise Unresolved(f"The name {name} does not resolve (DNS lookup failed).", "NXDOMAIN") from None
        except dns.resolver.NoAnswer:
            continue
        except dns.exception.Timeout:
            raise Unresolved(f"The DNS lookup for {name} did not answer within {timeout_s:g} s.") from None
        except dns.exception.DNSException as exc:
            raise Unresolved(f"The name {name} does not resolve (DNS lookup failed).", str(exc)) from None
        addresses += [record.address for record in answer if record.address not in addresses]
    return _some(name, addresses)


def ipv4_first(infos: list) -> list[str]:
    """Unique addresses of getaddrinfo's answer, IPv4 before IPv6, without IPv6 zone ids."""
    seen: list[str] = []
    for family in (socket.AF_INET, socket.AF_INET6):
        for info_family, _, _, _, sockaddr in infos:
            address = sockaddr[0].split("%", 1)[0]
            if info_family == family and address not in seen:
                seen.append(address)
    return seen


def _some(name: str, addresses: list[str]) -> list[str]:
    if not addresses:
        raise Unresolved(f"The name {name} has no IPv4 or IPv6 address.")
    return addresses


def _getaddrinfo_into(box: dict, name: str, port: int | None) -> None:
    try:
        box["infos"] = socket.getaddrinfo(name, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        box["error"] = exc
