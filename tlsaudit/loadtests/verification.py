"""Proof of control before we send load: a file on the site or a DNS TXT record.

HTTP file: `http(s)://<host>/.well-known/tlsaudit-<public id>.txt`, whose lines must all be
verification lines, one of them exactly `tlsaudit-verification=<secret>` (tlsaudit.domain.ownership);
fetched from the address the load would go to (the pinned IP, or the SSRF-checked resolution), HTTP
first then HTTPS, short timeouts, at most 4 KB. Redirects are followed only to the same host name, on
the port of the scheme they name, without user info. The secret is in no request we send.
DNS: a TXT record `_tlsaudit.<host>` equal to the same line, asked of settings.DNS_RESOLVER (or the
system's resolver); not for a site pinned to an IP (the record proves the name, not that address).

A proof covers the host name, ports and pinned IP it was made for (models.proof_subject), and every
other site of the same organization with that host name and pinned IP (`host_proof`): a host is proven
once for all its ports. Never across organizations: each proves for itself, with its own secret.
Checks return a `CheckResult`; `check_now` saves the outcome on the SiteVerification row.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from django.conf import settings
from django.utils import timezone

from tlsaudit.domain import ownership
from tlsaudit.loadtests.models import SiteVerification
from workers.net.errors import TargetError
from workers.net.target import resolve_target

HTTP_TIMEOUT_S = 5.0
DNS_TIMEOUT_S = 5.0
MAX_BODY_BYTES = 4096
MAX_REDIRECTS = 3


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    method: str
    message: str   # for the site owner: what we found, or what to fix
    ip: str = ""   # the address that served the file


class FetchError(Exception):
    pass


def verification_for(site) -> SiteVerification:
    verification, _ = SiteVerification.objects.get_or_create(site=site)
    verification.site = site
    return verification


def host_proof(site) -> SiteVerification:
    """The proof that covers `site`: its own when it holds, else one a sibling holds: a site of the same
    organization with the same host name and the same pinned IP (or none), on other ports. Ports do not
    matter to a proof of the name (DNS) or of the server (the file): load still goes only to an address
    that served the file (address_unproven_reason). Else the site's own, unproven."""
    own = verification_for(site)
    if own.is_verified:
        return own
    siblings = (SiteVerification.objects.select_related("site__organization")
                .filter(site__organization_id=site.organization_id, site__hostname__iexact=site.hostname,
                        site__pinned_ip=site.pinned_ip, verified_at__isnull=False)
                .exclude(site_id=site.pk).order_by("-verified_at", "pk"))
    return next((proof for proof in siblings if proof.is_verified), own)


def check_now(site, method: str | None = None) -> SiteVerification:
    """Run the asked check (or the file, then DNS) and save the outcome: a failed re-check
    withdraws an earlier verification."""
    verification = verification_for(site)
    methods = [method] if method else [SiteVerification.Method.HTTP, SiteVerification.Method.DNS]
    results = [CHECKS[m](site, verification) for m in methods]
    passed = next((r for r in results if r.ok), None)
    if passed:
        verification.record_pass(passed.method, timezone.now(), [passed.ip] if passed.ip else [])
    else:
        verification.record_failure(" ".join(r.message for r in results), timezone.now())
    verification.save(update_fields=["method", "verified_at", "proved_for", "proved_ips", "last_checked_at",
                                     "last_error"])
    return verification


def address_unproven_reason(site, ip: str) -> str | None:
    """Why no load may go to `ip` for `site` (None: it may). A proof of the name (a DNS record, or a file
    served from another address) says nothing about the server the name points at now: whoever runs a
    name can point it at anybody's server. So the address must have served the file; if it has not yet,
    it is asked now (one GET), and a pass is remembered. A pinned site's proof was made at its pinned IP."""
    verification = host_proof(site)
    if site.pinned_ip or ip in verification.proved_ips:
        return None
    # Asked on the ports of the site whose proof it is: that is where its owner serves the file.
    result = file_served_at(verification.site, verification, ip)
    if not result.ok:
        return (f"{site.hostname} now points at {ip}, and that server did not serve the verification file: "
                f"{result.message.removeprefix('HTTP file: ')} A DNS record or a file served elsewhere proves "
                "the name, not the server the load would go to; serve the file there.")
    verification.proved_ips = sorted({*verification.proved_ips, ip})
    verification.save(update_fields=["proved_ips"])
    return None


# --- HTTP file ---------------------------------------------------------------------------

def check_http_file(site, verification: SiteVerification) -> CheckResult:
    try:
        ip = resolve_site_ip(site, site.http_port)
    except FetchError as exc:
        return CheckResult(False, "http", f"HTTP file: {exc}")
    return file_served_at(site, verification, ip)


def file_served_at(site, verification: SiteVerification, ip: str) -> CheckResult:
    """The file, asked of `ip` itself over HTTP, then HTTPS (the name is sent as Host and SNI)."""
    problems = []
    for scheme, port in (("http", site.http_port), ("https", site.https_port)):
        url = f"{scheme}://{host_port(site.hostname, port, scheme)}{verification.file_path}"
        try:
            body = fetch(site, ip, url)
        except FetchError as exc:
            problems.append(f"{url}: {exc}")
            continue
        verdict = ownership.judge_file(body, verification.file_content)
        if verdict.ok:
            return CheckResult(True, "http", f"Found the verification line at {url}.", ip)
        problems.append(f"{url} answered, but {verdict.why}")
    return CheckResult(False, "http", "HTTP file: " + " ".join(problems))


def resolve_site_ip(site, port: int) -> str:
    try:
        return resolve_target(site.hostname, port, pinned_ip=site.pinned_ip,
                              allow_private=settings.ALLOW_PRIVATE_TARGETS, timeout=HTTP_TIMEOUT_S,
                              resolver=settings.DNS_RESOLVER).ip
    except TargetError as exc:
        raise FetchError(exc.message) from exc


def host_port(host: str, port: int, scheme: str) -> str:
    default = 80 if scheme == "http" else 443
    return host if port == default else f"{host}:{port}"


def fetch(site, ip: str, url: str) -> bytes:
    """GET url from `ip`, following at most MAX_REDIRECTS redirects that stay on the site (see
    `next_url`); the body (at most MAX_BODY_BYTES), or FetchError saying why not."""
    for _ in range(MAX_REDIRECTS + 1):
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        status, location, body = get_once(parts.scheme, site.hostname, ip, parts.port or default_port(parts.scheme),
                                          target)
        if status in (301, 302, 303, 307, 308):
            url = next_url(site, url, location)
            continue
        if status != 200:
            raise FetchError(f"answered HTTP {status} (expected 200 with the verification line).")
        return body
    raise FetchError(f"more than {MAX_REDIRECTS} redirects.")


def next_url(site, current: str, location: str) -> str:
    """Where a redirect from `current` leads, if it stays on the site: the same host name, http on the
    site's HTTP port or https on its HTTPS port, no user info; FetchError (with the reason) otherwise."""
    if not location or not all("!" <= c <= "~" and c != "\\" for c in location):   # printable ASCII, no "\\"
        raise FetchError(f"redirects to {ownership.excerpt(location)}, which is not a plain URL.")
    shown = location[:200]
    try:   # a broken IPv6 literal or port raises ValueError, here or on .port
        target = urlsplit(urljoin(current, location))
        port = target.port or default_port(target.scheme)
    except ValueError:
        raise FetchError(f"redirects to {ownership.excerpt(location)}, which is not a plain URL.") from None
    if target.scheme not in ("http", "https"):
        raise FetchError(f"redirects to {shown}: only http or https redirects are followed.")
    if (target.hostname or "").rstrip(".") != site.hostname.lower():
        raise FetchError(f"redirects to {shown}, another host: the file must be served by the "
                         "site itself (redirects are followed only within the same host).")
    if port != {"http": site.http_port, "https": site.https_port}[target.scheme]:
        raise FetchError(f"redirects to {shown}, another port: redirects are followed only to "
                         f"the site's HTTP port {site.http_port} or HTTPS port {site.https_port}.")
    if target.username is not None or target.password is not None:
        raise FetchError(f"redirects to {shown}, a URL with a user name: not followed.")
    return target.geturl()


def default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def get_once(scheme: str, host: str, ip: str, port: int, target: str) -> tuple[int, str, bytes]:
    connection = PinnedConnection(scheme, host, ip, port)
    try:
        connection.request("GET", target or "/", headers={
            "Host": host_port(host, port, scheme), "User-Agent": "TLS-Audit-verification/1", "Accept": "text/plain"})
        response = connection.getresponse()
        length = response.getheader("Content-Length")
        if length and length.isdigit() and int(length) > MAX_BODY_BYTES:
            raise FetchError(f"the file is {int(length)} bytes; it must be at most {MAX_BODY_BYTES} bytes.")
        body = response.read(MAX_BODY_BYTES + 1)
        if len(body) > MAX_BODY_BYTES:
            raise FetchError(f"the file is larger than {MAX_BODY_BYTES} bytes; it must hold only verification lines.")
        return response.status, response.getheader("Location", ""), body
    except socket.timeout:
        raise FetchError(f"no answer within {HTTP_TIMEOUT_S:g} s.") from None
    except ConnectionRefusedError:
        raise FetchError(f"connection refused on port {port}.") from None
    except (OSError, http.client.HTTPException) as exc:
        raise FetchError(f"could not be fetched ({exc.__class__.__name__}: {exc}).") from None
    finally:
        connection.close()


class PinnedConnection(http.client.HTTPConnection):
    """Connect to `ip` (never resolving `host` again); for https, SNI is `host`. Certificates are
    not checked: the proof is serving the token from the address we will load, not trust."""

    def __init__(self, scheme: str, host: str, ip: str, port: int):
        super().__init__(ip, port, timeout=HTTP_TIMEOUT_S)
        self.scheme = scheme
        self.server_name = host

    def connect(self):
        sock = socket.create_connection((self.host, self.port), self.timeout)
        if self.scheme == "https":
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            sock = context.wrap_socket(sock, server_hostname=self.server_name)
        self.sock = sock


# --- DNS TXT -----------------------------------------------------------------------------

def check_dns_txt(site, verification: SiteVerification) -> CheckResult:
    import dns.exception
    import dns.resolver

    if site.pinned_ip:
        return CheckResult(False, "dns", f"DNS: {site.display_hostname} is pinned to {site.pinned_ip}: a DNS record "
                                         "proves control of the name, not of that address; serve the file instead.")
    name = verification.txt_name
    try:
        answer = dns_resolver().resolve(name, "TXT", lifetime=DNS_TIMEOUT_S)
    except dns.resolver.NXDOMAIN:
        return CheckResult(False, "dns", f"DNS: {name} does not exist (add the TXT record).")
    except dns.resolver.NoAnswer:
        return CheckResult(False, "dns", f"DNS: {name} has no TXT record.")
    except dns.exception.Timeout:
        return CheckResult(False, "dns", f"DNS: no answer for {name} within {DNS_TIMEOUT_S:g} s.")
    except dns.exception.DNSException as exc:
        return CheckResult(False, "dns", f"DNS: the lookup of {name} failed ({exc}).")
    verdict = ownership.judge_txt([record.strings for record in answer], verification.txt_value)
    if verdict.ok:
        return CheckResult(True, "dns", f"Found {verification.txt_value} in the TXT record {name}.")
    return CheckResult(False, "dns", f"DNS: {name}: {verdict.why}")


def dns_resolver():
    import dns.resolver

    if settings.DNS_RESOLVER is None:
        return dns.resolver.Resolver()
    resolver = dns.resolver.Resolver(configure=False)
    resolver.nameservers = [settings.DNS_RESOLVER[0]]
    resolver.port = settings.DNS_RESOLVER[1]
    return resolver


CHECKS = {SiteVerification.Method.HTTP: check_http_file, SiteVerification.Method.DNS: check_dns_txt}
