"""Parse what a user types as a site address into (ASCII hostname, port). Pure.

Accepts `example.com`, `example.com:8443`, `https://example.com/`, `bücher.example`
(IDN, stored as punycode), IP literals (`192.0.2.1`, `[2001:db8::1]:443`). Refuses paths,
queries, credentials, bad ports and malformed names with a message that says why.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import idna

from tlsaudit.domain.services import UnknownService, alias_port, service_named
from tlsaudit.domain.text import describe

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
MAX_HOSTNAME = 253


class AddressError(ValueError):
    """The text is not a usable site address; str(exc) is the message for the user."""


@dataclass(frozen=True)
class SiteAddress:
    hostname: str              # ASCII: punycode for IDNs, compressed form for IPv6
    port: int | None           # only when the user typed one
    scheme: str | None = None  # "http" / "https" / a TLS service ("smtp", "imaps"...) when a URL was pasted


def parse_address(text: str, *, services: bool = False) -> SiteAddress:
    """`services=True` also accepts the TLS services of domain/services.py (`smtp://mail.example.com`),
    for the callers that audit any TLS service (site form, import, API, `audit`); the HTTP tools
    (load tests, handshakes) keep http:// and https:// only."""
    text = (text or "").strip()
    if not text:
        raise AddressError("Enter a host name such as example.com.")
    if any(ch.isspace() for ch in text):
        raise AddressError("A host name cannot contain spaces.")
    if "://" in text:
        return _parse_url(text, services)
    if "/" in text or "?" in text or "#" in text:
        raise AddressError("Enter only the host name (and port), without a path: e.g. example.com:443.")
    host, port = _split_host_port(text)
    return SiteAddress(normalize_hostname(host), port)


def _parse_url(text: str, services: bool = False) -> SiteAddress:
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    implied_port = None
    if services and scheme not in ("http", "https"):
        try:
            scheme, implied_port = service_named(scheme).scheme, alias_port(scheme)
        except UnknownService as exc:
            raise AddressError(str(exc)) from None
    elif scheme not in ("http", "https"):
        raise AddressError(f"Only http:// and https:// addresses can be audited, not {scheme}://.")
    if parts.username or parts.password:
        raise AddressError("Remove the user name and password from the address.")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise AddressError("Enter the site's address without a path or query: e.g. https://example.com/.")
    host, port = _split_host_port(parts.netloc)
    return SiteAddress(normalize_hostname(host), port if port is not None else implied_port, scheme)


def _split_host_port(netloc: str) -> tuple[str, int | None]:
    if netloc.startswith("["):
        host, sep, rest = netloc[1:].partition("]")
        if not sep:
            raise AddressError("An IPv6 address in brackets is missing its closing ']'.")
        if rest and not rest.startswith(":"):
            raise AddressError("Unexpected text after the IPv6 address.")
        return host, parse_port(rest[1:]) if rest else None
    if netloc.count(":") > 1:
        return netloc, None  # bare IPv6 literal
    host, sep, port = netloc.partition(":")
    return host, parse_port(port) if sep else None


def parse_port(text: str | int) -> int:
    try:
        port = int(str(text).strip())
    except ValueError:
        raise AddressError(f"Port {text!r} is not a number.") from None
    if not 1 <= port <= 65535:
        raise AddressError(f"Port {port} is out of range: use 1 to 65535.")
    return port


def normalize_hostname(host: str) -> str:
    host = host.strip().rstrip(".")
    if not host:
        raise AddressError("Enter a host name such as example.com.")
    ip = _as_ip(host)
    if ip is not None:
        return ip
    try:
        ascii_host = idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise AddressError(f"{host!r} is not a valid host name: {idna_problem(str(exc))}.") from None
    _check_labels(ascii_host)
    return ascii_host


IDNA_CODEPOINT = re.compile(
    r"(?:Codepoint|Joiner) U\+([0-9A-Fa-f]+)(?: not allowed)? at position (\d+) (?:of|in) '(.*)'")
IDNA_WORDS = {
    "Label must not start or end with a hyphen": "a part between dots may not start or end with a hyphen",
    "Empty Label": "it has two dots in a row (an empty part)",
    "Label too long": "a part between dots is longer than 63 characters",
    "Domain too long": f"it is longer than {MAX_HOSTNAME} characters",
}


def idna_problem(message: str) -> str:
    """The idna library's complaint ('Codepoint U+005F at position 4 of 'foo_bar' not allowed') in words."""
    found = IDNA_CODEPOINT.search(message)
    if found:
        char, label = chr(int(found[1], 16)), found[3]
        shown = f"“{char}”" if char.isprintable() and not char.isspace() else describe(char)
        if char == " ":
            shown = "a space"
        where = f" (in “{label}”)" if label.isprintable() and "\\" not in label else ""
        return f"{shown} is not allowed in a host name{where}; use letters, digits, hyphens and dots"
    return IDNA_WORDS.get(message.strip(), "it cannot be written as an internationalised domain name")


def _as_ip(host: str) -> str | None:
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        return None


def _check_labels(host: str) -> None:
    if len(host) > MAX_HOSTNAME:
        raise AddressError(f"The host name is {len(host)} characters long; the limit is {MAX_HOSTNAME}.")
    labels = host.split(".")
    if len(labels) < 2 and host != "localhost":
        raise AddressError(f"{host!r} is not a full domain name: add the domain, e.g. {host}.example.com.")
    for label in labels:
        if not _LABEL.match(label):
            raise AddressError(f"{label!r} is not a valid part of a host name: use letters, digits and "
                               "hyphens, not starting or ending with a hyphen, at most 63 characters.")
    if labels[-1].isdigit():
        raise AddressError(f"{host!r} looks like an IP address but is not a valid one.")


def display_hostname(ascii_host: str) -> str:
    """Unicode form for display (bücher.example); falls back to the ASCII form."""
    if "xn--" not in ascii_host:
        return ascii_host
    try:
        return idna.decode(ascii_host)
    except idna.IDNAError:
        return ascii_host


def parse_tags(text: str) -> list[str]:
    """Comma- or space-separated tags, lower-cased, unique, in the order given."""
    seen: list[str] = []
    for raw in re.split(r"[,\s]+", text or ""):
        tag = raw.strip().lower()
        if not tag:
            continue
        if len(tag) > 40 or not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", tag):
            raise AddressError(f"Tag {raw!r} is not valid: use letters, digits, '-', '_' or '.', at most 40 characters.")
        if tag not in seen:
            seen.append(tag)
    return seen
