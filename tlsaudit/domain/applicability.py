"""Which of our tools mean something for which TLS service. Pure: the views, the API and the
services that queue work ask the same question and get the same words.

The audit itself works for every service. HSTS, the browser probe, load tests and the HTTP-vs-HTTPS
sweep are HTTP: an SMTP server has no page to load and no header to send. The handshake runner speaks
TLS from the first byte, so it serves the implicit-TLS services (SMTPS, IMAPS...) but not a service
that needs a STARTTLS exchange first.
"""

from __future__ import annotations

from tlsaudit.domain.services import Service

LOAD = "load"                # PerfRun.Kind values, so a run's kind is its tool
SWEEP = "sweep"
HANDSHAKES = "handshakes"
PROBE = "probe"
HSTS = "hsts"

_WHAT = {
    LOAD: "load tests send HTTP requests",
    SWEEP: "the overhead sweep compares HTTP with HTTPS",
    PROBE: "the browser probe loads a web page",
    HSTS: "HSTS is an HTTP header",
}


def not_applicable_reason(service: Service, tool: str) -> str | None:
    """None when `tool` works for `service`; otherwise why not, in one sentence for the site owner."""
    if service.http:
        return None
    if tool == HANDSHAKES:
        if service.implicit_tls:
            return None
        return (f"Not applicable to {article(service.label)} {service.label} service: the handshake runner speaks "
                "TLS from the first byte, and this service starts in clear text until it is asked to upgrade.")
    return f"Not applicable to {article(service.label)} {service.label} service: {_WHAT[tool]}."


TOOL_TITLES = {HSTS: "HSTS", PROBE: "Browser probe", LOAD: "Load test", SWEEP: "HTTP vs HTTPS sweep",
               HANDSHAKES: "Handshake timing"}


def tools_not_applicable(service: Service) -> list[tuple[str, str, str]]:
    """(tool, title, reason) for each of our tools that means nothing for `service`; [] for HTTPS."""
    return [(tool, title, reason) for tool, title in TOOL_TITLES.items()
            if (reason := not_applicable_reason(service, tool))]


def article(label: str) -> str:
    """"an" before a vowel sound; the labels here are acronyms read letter by letter (an SMTP, an LDAP, a POP3)."""
    return "an" if label[:1] in "AEFHILMNORSX" else "a"
