"""The TLS services a site can be: HTTPS, and mail, directory, chat, file and database services
that speak TLS from the first byte or after a STARTTLS exchange. Pure: the one table both the web side
(forms, import, API, report) and the scan engine read.

`starttls` names the opportunistic-TLS dialect (sslyze's ProtocolWithOpportunisticTlsEnum member name)
for a service that starts in clear text; None means TLS from the first byte (HTTPS, SMTPS, IMAPS...).
`http` marks the services whose HTTP-only checks (HSTS, the browser probe, load tests) mean something.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Service:
    scheme: str           # what the user types before "://": "smtp"
    label: str            # what the report calls it: "SMTP (STARTTLS)"
    default_port: int
    starttls: str | None  # sslyze's ProtocolWithOpportunisticTlsEnum name, None for implicit TLS
    http: bool = False

    @property
    def implicit_tls(self) -> bool:
        return self.starttls is None


HTTPS = "https"

SERVICES: dict[str, Service] = {s.scheme: s for s in (
    Service("https", "HTTPS", 443, None, http=True),
    Service("smtp", "SMTP (STARTTLS)", 25, "SMTP"),
    Service("smtps", "SMTPS", 465, None),
    Service("imap", "IMAP (STARTTLS)", 143, "IMAP"),
    Service("imaps", "IMAPS", 993, None),
    Service("pop3", "POP3 (STARTTLS)", 110, "POP3"),
    Service("pop3s", "POP3S", 995, None),
    Service("ftp", "FTP (AUTH TLS)", 21, "FTP"),
    Service("xmpp", "XMPP (STARTTLS)", 5222, "XMPP"),
    Service("ldap", "LDAP (STARTTLS)", 389, "LDAP"),
    Service("ldaps", "LDAPS", 636, None),
    Service("postgres", "PostgreSQL (SSLRequest)", 5432, "POSTGRES"),
)}
# Other spellings users type for the same service.
ALIASES = {"postgresql": "postgres", "submission": "smtp"}
# An alias whose own port differs from its service's: mail submission is SMTP with STARTTLS on 587
# (RFC 6409), where port 25 is often blocked (outside review).
ALIAS_PORTS = {"submission": 587}
SERVICE_CHOICES = [(s.scheme, s.label) for s in SERVICES.values()]


class UnknownService(ValueError):
    """Not a TLS service we audit; str(exc) is the message for the user."""


def service_named(scheme: str) -> Service:
    """The service for a URL scheme (case-insensitive, aliases accepted)."""
    name = (scheme or "").strip().lower()
    name = ALIASES.get(name, name)
    try:
        return SERVICES[name]
    except KeyError:
        known = ", ".join(f"{s}://" for s in SERVICES)
        raise UnknownService(f"{scheme}:// is not a TLS service we audit. Known: {known}.") from None


def alias_port(scheme: str) -> int | None:
    """The port a spelling implies when the user typed none (`submission://` -> 587), else None."""
    return ALIAS_PORTS.get((scheme or "").strip().lower())


def is_http(scheme: str) -> bool:
    return service_named(scheme).http
