"""The TLS scan engine: one host, one pinned address, every sslyze command plus our probes.

Plain arguments in, a plain `ScanOutcome` out; no Django. The Celery task stores
`outcome.facts.to_dict()`, `outcome.raw`, `outcome.mozilla` and `outcome.error`.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from tlsaudit.domain.scanfacts import (
    BAD,
    NOT_APPLICABLE,
    NOT_TESTED,
    PQ_GROUPS,
    CertificateDeployment,
    Check,
    Hsts,
    PostQuantum,
    ScanFacts,
    ServerPreference,
)
from tlsaudit.domain.services import HTTPS, Service, service_named
from workers.net import outcomes
from workers.net import reach as preflight
from workers.net.caa import look_up_caa
from workers.net.deadline import Deadline, DeadlineExceeded, connection_limit, gates
from workers.net.errors import TIMEOUT, TargetError
from workers.net.reach_errors import (
    classify_connectivity_error,
    deadline_error,
    reach_error,
    speaks_no_tls,
    specific_reach_error,
)
from workers.net.target import ResolvedTarget, resolve_target
from workers.tls import aia, clients, hello_preference, probes, resumption, revocation, sni, tls13
from workers.tls import facts as convert
from workers.tls.hsts import parse_hsts
from workers.tls.mozilla import mozilla_report, untested_report
from workers.tls.progress import DONE, ERROR, SKIPPED, STARTED
from workers.tls.resumption import ResumptionProbe
from workers.tls.warmup import filter_sslyze_warnings

log = logging.getLogger(__name__)

ProgressCallback = Callable[[str, str], None]
# Where sslyze is used: imported by preload_sslyze, beside the first network round trips.
_SSLYZE_SCAN = "workers.tls.sslyze_scan"

# Python's ssl can negotiate these; SSLv2/SSLv3 are beyond OpenSSL 3.
_PREFERENCE_PROTOCOLS = ("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3")
# sslyze's handshake-level failures, for which our own wire diagnosis tells no_tls from timeout.
_HANDSHAKE_FAILURES = {"ServerTlsConfigurationNotSupported", "ServerRejectedTlsHandshake", "TlsHandshakeTimedOut"}
# Failures after which our wire diagnosis says what the port speaks instead of TLS.
_DIAGNOSED_FAILURES = _HANDSHAKE_FAILURES | {"ConnectionToServerFailed"}
# Pre-flight outcomes that end the audit before sslyze: nothing answers, or too slowly for any client.
# The others (a TLS error, a reset) go on to sslyze, which tries versions and suites we cannot offer,
# unless the server's first bytes were no TLS record at all (errors.speaks_no_tls).
_HOPELESS = {outcomes.REFUSED, outcomes.CONNECT_TIMEOUT, outcomes.UNREACHABLE, outcomes.SILENT, outcomes.SLOW,
             outcomes.STARTTLS_REFUSED, outcomes.STARTTLS_STALLED}
# The whole audit's deadline when the caller gives none (settings.AUDIT_DEADLINE_SECONDS in the app).
DEFAULT_DEADLINE_S = 50.0
# What sslyze leaves to our own probes (AIA, preference, ALPN, HSTS): at 150 ms RTT they took 3-6 s
# (bench/audit_budget.py); a probe that finds the time gone says so instead of failing the audit.
PROBES_RESERVE_S = 5.0


@dataclass
class ScanOutcome:
    facts: ScanFacts | None
    mozilla: dict = field(default_factory=dict)     # profile -> {"compliant", "issues", "error"}
    raw: dict = field(default_factory=dict)         # sslyze JSON, trimmed (see trim_raw)
    error: TargetError | None = None
    duration_s: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


def run_scan(
    host: str,
    port: int = 443,
    *,
    ip: str | None = None,
    ca_file: str | None = None,
    allow_private: bool = False,
    on_progress: ProgressCallback | None = None,
    network_timeout: float = 5.0,
    max_retries: int = 1,
    per_server_connections: int = 5,
    resolver: tuple[str, int] | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    service: str = HTTPS,
    suite_offers: bool = True,
    connection_lifetime_s: float | None = None,
) -> ScanOutcome:
    """Scan one TLS endpoint within `deadline_s` seconds, whatever the server does. Errors a site
    owner can act on come back in `outcome.error`, never raised. `service` is a scheme of
    domain/services.py: on a STARTTLS service every connection, sslyze's and ours, starts with its
    clear-text prelude (starttls.py), and the HTTP-only checks are not applicable.

    1. Resolve and pin; 2. the pre-flight handshake: nothing answering, a trickle, or no TLS at all
    ends the audit here; 3. sslyze, until `PROBES_RESERVE_S` before the deadline (past it, the scan
    is incomplete and the audit fails with the reason: partial suite results would mislead);
    4. our probes, until the deadline (one that finds no time left is "not tested", with why).
    Every socket of every step obeys the deadline and its own lifetime (workers/net/deadline.py)."""
    filter_sslyze_warnings()
    kind = service_named(service)   # UnknownService (a ValueError) for a caller's typo: loud
    preload_sslyze()
    scan = _Scan(on_progress)
    deadline = Deadline(deadline_s, connection_s=connection_limit(network_timeout, connection_lifetime_s))
    started_at = datetime.now(timezone.utc)
    try:
        with scan.phase("resolve"):
            target = resolve_target(host, port, pinned_ip=ip, allow_private=allow_private,
                                    timeout=bounded_wait(deadline, network_timeout), resolver=resolver)
    except TargetError as error:
        return scan.outcome(None, error=error, mozilla=untested_report(error.message))
    try:
        with scan.phase("reachability"), gates().held(target.ip, max(0.0, deadline.remaining())):
            reach = preflight.check_tls(target.ip, target.port, target.host, network_timeout,
                                        total_s=bounded_wait(deadline, deadline.connection_s),
                                        starttls_dialect=kind.starttls)
    except DeadlineExceeded as exc:  # other audits of this address held every slot until our deadline
        error = TargetError(TIMEOUT, f"The audit of {target.host} did not start within its {deadline_s:g} s "
                                     f"deadline: {exc}. Nothing was graded.")
        return scan.outcome(None, error=error, mozilla=untested_report(error.message))
    if reach.outcome in _HOPELESS or speaks_no_tls(reach):
        error = reach_error(reach, target.host)
        return scan.outcome(None, error=error, mozilla=untested_report(error.message))
    endpoint = probes.Endpoint(target.host, target.ip, target.port, network_timeout, deadline, kind.starttls)
    # ALPN and the HSTS fetch need nothing sslyze finds: they run beside its commands, not after them,
    # from the moment its connectivity test passed (a server it cannot scan gets none).
    from workers.tls import sslyze_scan  # preloaded: here at most the rest of its import is waited for
    with ThreadPoolExecutor(1, thread_name_prefix="probes") as side:
        beside = []

        def start_side_probes(accepted: dict[str, list[str]]):
            beside.append(side.submit(probe_beside_sslyze, scan, endpoint, kind, accepted))

        sslyze_deadline = deadline.phase(end_before_s=PROBES_RESERVE_S)
        result, connectivity_error = sslyze_scan.run_sslyze(
            target, scan, kind, ca_file=ca_file, network_timeout=network_timeout, max_retries=max_retries,
            per_server_connections=per_server_connections, deadline=sslyze_deadline, on_connected=start_side_probes,
            suite_offers=suite_offers)
        raw = trim_raw(sslyze_scan.sslyze_json(result))
        if sslyze_deadline.overran or (result.scan_result is None and sslyze_deadline.cut_connections):
            error = deadline_error(target.ip, target.port, deadline_s, sslyze_deadline, scan.elapsed())
            return scan.outcome(None, error=error, raw=raw, mozilla=untested_report(error.message))
        if result.scan_result is None:
            error = specific_reach_error(reach, target.host) or diagnose_connectivity_error(
                scan, target, connectivity_error, network_timeout, deadline, kind.starttls)
            return scan.outcome(None, error=error, raw=raw, mozilla=untested_report(error.message))
        facts = build_facts(scan, target, result, started_at, use_custom_ca=ca_file is not None, service=kind)
        with scan.phase("aia"):
            complete_chains(facts, result, allow_private=allow_private, timeout=network_timeout, resolver=resolver,
                            deadline=deadline)
        # The CA's responder is another server: asked beside our probes, so a slow one takes no time from them.
        # So is the DNS: the site's CAA records are looked up beside them too.
        with ThreadPoolExecutor(2, thread_name_prefix="revocation") as checker:
            revoked = checker.submit(check_revocations, scan, facts, result, allow_private=allow_private,
                                     timeout=network_timeout, resolver=resolver, deadline=deadline)
            caa_records = checker.submit(look_up_caa, target.host, resolver,
                                         max(0.0, min(CAA_BUDGET_S, deadline.remaining() - 1)))
            run_probes(scan, facts, endpoint,
                       beside[0].result() if beside else probe_beside_sslyze(scan, endpoint, kind))
            facts.certificates = revoked.result()
            facts.caa = caa_records.result()
        with scan.phase("mozilla"):
            mozilla = safe_mozilla_report(result)
        facts.duration_s = round(scan.elapsed(), 3)
        return scan.outcome(facts, raw=raw, mozilla=mozilla)


CAA_BUDGET_S = 4.0     # every CAA lookup of an audit, the tree climbed included


def preload_sslyze(*then: str) -> None:
    """Import sslyze (sslyze_scan.py), then the modules `then` names, on a side thread unless they are
    loaded: in a new process (`manage.py audit`) their imports (~0.45 s for sslyze) then overlap the
    resolution and the pre-flight handshake instead of preceding them. A
    worker process has them loaded already; a module still being imported is waited for where it is used."""
    modules = [name for name in (_SSLYZE_SCAN, *then) if name not in sys.modules]
    if modules:
        threading.Thread(target=import_modules, args=(modules,), name="preload", daemon=True).start()


def import_modules(names: list[str]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:   # noqa: BLE001 — where the module is used, its import raises it again
            log.debug("preloading %s failed", name, exc_info=True)


def sslyze_scan_module():
    return importlib.import_module(_SSLYZE_SCAN)


def bounded_wait(deadline: Deadline, wait_s: float) -> float:
    """`wait_s`, or what is left of the deadline when that is less (never 0: a last short try)."""
    return max(0.1, min(wait_s, deadline.remaining()))


def trim_raw(raw: dict) -> dict:
    """Drop rejected suites (two thirds of the size, no information we keep) and trust-store file paths
    (server filesystem paths, never shown to users). Mutates and returns `raw`."""
    _walk_trim(raw)
    return raw


def _walk_trim(node) -> None:
    if isinstance(node, dict):
        node.pop("rejected_cipher_suites", None)
        store = node.get("trust_store")
        if isinstance(store, dict):
            store.pop("path", None)
        for value in node.values():
            _walk_trim(value)
    elif isinstance(node, list):
        for value in node:
            _walk_trim(value)


def diagnose_connectivity_error(scan: "_Scan", target: ResolvedTarget, exc, network_timeout: float,
                                deadline: Deadline, starttls_dialect: str | None = None) -> TargetError:
    exc_type = type(exc).__name__ if exc is not None else "Unknown"
    message = getattr(exc, "error_message", str(exc))
    wire = None
    if exc_type in _DIAGNOSED_FAILURES:
        with scan.phase("diagnose"):
            wire = probes.diagnose_wire(target.ip, target.port, network_timeout, deadline,
                                        starttls_dialect=starttls_dialect, host=target.host)
    return classify_connectivity_error(exc_type, message, ip=target.ip, port=target.port,
                                       timeout=network_timeout, wire=wire)


def safe_mozilla_report(result) -> dict:
    try:
        return mozilla_report(result)
    except Exception as exc:        # a checker bug must not lose a finished scan
        log.exception("Mozilla checker failed")
        return untested_report(f"The Mozilla checker failed: {exc}")


# --- facts ---------------------------------------------------------------------------------------

def build_facts(scan: "_Scan", target: ResolvedTarget, result, started_at: datetime,
                use_custom_ca: bool, service: Service | None = None) -> ScanFacts:
    with scan.phase("convert"):
        scan_result = result.scan_result
        curves, curves_check = convert.curve_facts(scan_result)
        return ScanFacts(
            host=target.host,
            port=target.port,
            ip=target.ip,
            started_at=started_at,
            duration_s=0.0,
            scanner=sslyze_scan_module().SCANNER,
            protocols=convert.protocol_checks(scan_result),
            suites=convert.accepted_suites(scan_result),
            curves=curves,
            curves_check=curves_check,
            certificates=convert.certificate_deployments(scan_result, target.host),
            trust_use_custom_ca=use_custom_ca,
            checks=convert.named_checks(scan_result),
            errors=scheduled_errors(scan_result),
            timed_out_suite_tests=convert.count_timed_out_suite_tests(scan_result),
            service=(service or service_named(HTTPS)).scheme,
            client_auth=convert.client_auth(result),
        )


def scheduled_errors(scan_result) -> dict[str, str]:
    """The commands that failed; a command we did not ask for (HTTP headers off HTTP) failed nothing."""
    errors = convert.command_errors(scan_result)
    return {name: reason for name, reason in errors.items() if reason != "not scheduled"}


def complete_chains(facts: ScanFacts, result, *, allow_private: bool, timeout: float,
                    resolver: tuple[str, int] | None = None, deadline: Deadline | None = None) -> None:
    """Fetch the missing intermediate of an incomplete chain, as SSL Labs does (see aia.py)."""
    attempt = result.scan_result.certificate_info
    if not convert.completed(attempt):
        return
    deployments = attempt.result.certificate_deployments
    completed = [aia.complete_via_aia(raw, ours, facts.host, allow_private=allow_private, timeout=timeout,
                                      resolver=resolver, deadline=deadline)
                 for raw, ours in zip(deployments, facts.certificates)]
    facts.certificates = [aia.unknown_if_root_missing(raw, ours) for raw, ours in zip(deployments, completed)]


def check_revocations(scan: "_Scan", facts: ScanFacts, result, *, allow_private: bool, timeout: float,
                      resolver: tuple[str, int] | None = None,
                      deadline: Deadline | None = None) -> list[CertificateDeployment]:
    """`facts.certificates` with each leaf's revocation status (revocation.py), all found within one
    short budget."""
    attempt = result.scan_result.certificate_info
    if not convert.completed(attempt):
        return facts.certificates
    with scan.phase("revocation"):
        limit = revocation.budget(deadline)
        return [replace(ours, revocation=revocation.check_revocation(
                    raw, allow_private=allow_private, timeout=timeout, deadline=limit, resolver=resolver))
                for raw, ours in zip(attempt.result.certificate_deployments, facts.certificates)]


@dataclass
class _SideProbes:
    alpn: object
    alpn_check: Check
    hsts: Hsts | None
    hsts_check: Check
    clients: list
    post_quantum: PostQuantum    # as probed, before knowing whether the server offers TLS 1.3
    preferences: dict = field(default_factory=dict)     # protocol -> PreferenceObservation | None
    resumption: ResumptionProbe | None = None           # as probed, before knowing the versions offered
    no_sni: tuple[str, str] | str | None = None         # the leaf served without SNI, or why none was


def probe_beside_sslyze(scan: "_Scan", endpoint: probes.Endpoint, service: Service,
                        accepted: dict[str, list[str]] | None = None) -> _SideProbes:
    """The probes that need nothing sslyze finds (ALPN then HSTS, client simulation, post-quantum
    groups, the suite picks the preference order is read from), side by side on threads of their own
    while sslyze runs. Each connection takes its slot of the address's gate like sslyze's, so the
    per-IP limit still holds: they fill the slots sslyze's commands leave idle instead of running
    after them. `accepted`: protocol -> the suites already enumerated as accepted."""
    with ThreadPoolExecutor(6, thread_name_prefix="beside") as pool:
        http = pool.submit(probe_alpn_and_hsts, scan, endpoint, service)
        simulated = pool.submit(simulate_clients, scan, endpoint)
        hybrid = pool.submit(probe_post_quantum, scan, endpoint)
        picks = pool.submit(observe_preferences, scan, endpoint, accepted or {})
        resumed = pool.submit(probe_resumption, scan, endpoint)
        no_sni = pool.submit(probe_without_sni, scan, endpoint)
        return _SideProbes(*http.result(), clients=simulated.result(), post_quantum=hybrid.result(),
                           preferences=picks.result(), resumption=resumed.result(), no_sni=no_sni.result())


def probe_without_sni(scan: "_Scan", endpoint: probes.Endpoint) -> tuple[str, str] | str | None:
    """None when the connection itself failed: that says nothing about SNI."""
    with scan.phase("sni"):
        try:
            return sni.leaf_without_sni(endpoint)
        except OSError:
            return None


def probe_resumption(scan: "_Scan", endpoint: probes.Endpoint) -> ResumptionProbe:
    with scan.phase("resumption"):
        return resumption.probe_resumption(endpoint)


def observe_preferences(scan: "_Scan", endpoint: probes.Endpoint, accepted: dict[str, list[str]]) -> dict:
    """Each protocol's suite picks, the protocols side by side; read against the accepted suites
    afterwards (measure_preference). Where the accepted suites are known already, only they are
    offered (a refused protocol costs no connection); elsewhere everything we can offer."""
    observers = {protocol: (lambda p=protocol: probes.observe_preference(endpoint, p, accepted.get(p)))
                 for protocol in _PREFERENCE_PROTOCOLS[:-1]}
    observers["TLSv1.3"] = lambda: tls13.observe_tls13_preference(endpoint)
    with scan.phase("preference_picks", report=False), \
            ThreadPoolExecutor(len(observers), thread_name_prefix="picks") as pool:
        found = {protocol: pool.submit(observe) for protocol, observe in observers.items()}
        return {protocol: future.result() for protocol, future in found.items()}


def probe_alpn_and_hsts(scan: "_Scan", endpoint: probes.Endpoint, service: Service) -> tuple:
    """Off HTTP neither means anything: not applicable, and no HTTP request is sent to a mail or
    database server."""
    if not service.http:
        return not_applicable_http_probes(scan, service)
    with scan.phase("alpn", report=False):
        alpn, alpn_check = probes.probe_alpn(endpoint)
    scan.report("alpn", DONE if alpn_check.tested else ERROR)
    with scan.phase("hsts", report=False):
        hsts, hsts_check = measure_hsts(endpoint)
    scan.report("hsts", DONE if hsts_check.tested else ERROR)
    return alpn, alpn_check, hsts, hsts_check


def simulate_clients(scan: "_Scan", endpoint: probes.Endpoint) -> list:
    with scan.phase("clients"):
        return clients.simulate_clients(endpoint)


def probe_post_quantum(scan: "_Scan", endpoint: probes.Endpoint) -> PostQuantum:
    """Probed without waiting to learn whether TLS 1.3 is offered: interpret_post_quantum reads it after."""
    with scan.phase("post_quantum", report=False):   # run_probes reports the outcome, once interpreted
        return tls13.probe_post_quantum(endpoint)


def not_applicable_http_probes(scan: "_Scan", service: Service) -> tuple:
    why = f"{service.label} is not HTTP"
    alpn = Check(NOT_APPLICABLE, reason=f"{why}: ALPN here chooses between HTTP versions (h2, http/1.1).")
    hsts = Check(NOT_APPLICABLE, reason=f"{why}: HSTS is an HTTP header that only browsers obey.")
    scan.report("alpn", SKIPPED)
    scan.report("hsts", SKIPPED)
    return [], alpn, None, hsts


def run_probes(scan: "_Scan", facts: ScanFacts, endpoint: probes.Endpoint, side: _SideProbes) -> None:
    """What needs sslyze's findings (the suites to order), then the side probes' results read in their light."""
    with scan.phase("preference"):
        facts.preferences = measure_preferences(scan, facts, endpoint, side.preferences)
    facts.alpn, facts.alpn_check, facts.hsts, facts.hsts_check = side.alpn, side.alpn_check, side.hsts, side.hsts_check
    facts.client_simulation = clients.with_limits(side.clients, facts.certificates)
    if side.resumption is not None:
        facts.checks.update(resumption_checks(facts, side.resumption))
    facts.without_sni = sni.without_sni(side.no_sni, facts.certificates)
    facts.post_quantum = interpret_post_quantum(facts, side.post_quantum)
    scan.report("post_quantum", DONE if facts.post_quantum.check.tested else ERROR)


def resumption_checks(facts: ScanFacts, probed: ResumptionProbe) -> dict[str, Check]:
    """Our resumption probe (sslyze's session-resumption command is not run), each check read in the
    light of the versions the server offers."""
    def refused(*versions: str) -> bool:      # known not offered (a version sslyze could not test may be)
        return all(facts.protocol_tested(v) and not facts.supports(v) for v in versions)

    only13 = Check(NOT_TESTED, reason="The server only speaks TLS 1.3: it resumes with TLS 1.3 tickets.")
    old_versions = refused("TLSv1.0", "TLSv1.1", "TLSv1.2") and facts.supports("TLSv1.3")
    return {
        "session_id_resumption": only13 if old_versions else probed.session_id,
        "session_ticket_resumption": only13 if old_versions else probed.ticket,
        "tls13_resumption": Check(NOT_TESTED, reason="The server does not offer TLS 1.3.")
        if refused("TLSv1.3") else probed.tls13,
    }


def interpret_post_quantum(facts: ScanFacts, probed: PostQuantum) -> PostQuantum:
    """Hybrid groups exist in TLS 1.3 only: what sslyze found about TLS 1.3 decides what the probe means."""
    if not facts.protocol_tested("TLSv1.3"):
        return PostQuantum(Check(NOT_TESTED, reason="TLS 1.3 support is unknown, so post-quantum groups were "
                                                    "not probed."))
    if not facts.supports("TLSv1.3"):
        return PostQuantum(Check(BAD, detail="Post-quantum key exchange needs TLS 1.3, which the server does "
                                             "not offer."), rejected=PQ_GROUPS)
    return probed


def measure_preferences(scan: "_Scan", facts: ScanFacts, endpoint: probes.Endpoint,
                        observed: dict | None = None) -> dict[str, ServerPreference]:
    """One probe per protocol, the protocols side by side (each is a few sequential handshakes), each
    read from the picks observed beside sslyze when they answer it."""
    protocols = [protocol for protocol in ("SSLv3", *_PREFERENCE_PROTOCOLS) if facts.supports(protocol)]
    if not protocols:
        return {}
    observed = observed or {}
    with ThreadPoolExecutor(len(protocols), thread_name_prefix="preference") as pool:
        found = pool.map(lambda protocol: measure_preference(scan, facts, endpoint, protocol,
                                                             observed.get(protocol)), protocols)
        return dict(zip(protocols, found))


def measure_preference(scan: "_Scan", facts: ScanFacts, endpoint: probes.Endpoint, protocol: str,
                       observation: probes.PreferenceObservation | None = None) -> ServerPreference:
    """The observation's answer when it gives one (the same the probe would, without its handshakes),
    else the probe over sslyze's accepted suites."""
    name = f"preference:{protocol}"
    scan.report(name, STARTED)
    accepted = facts.suites_for(protocol)
    if protocol == "SSLv3":
        preference = ServerPreference(
            protocol, None, tuple(s.name for s in accepted),
            reason="Python's OpenSSL 3 cannot speak SSLv3, so its suite order was not measured.")
    elif protocol == "TLSv1.3":     # Python's ssl cannot pick TLS 1.3 suites: our own ClientHello can
        preference = (tls13.tls13_preference_observed(observation, accepted)
                      or tls13.probe_tls13_preference(endpoint, accepted))
    elif len(accepted) >= 2 and probes.split_offerable(protocol, accepted)[1]:
        # some accepted suites Python's OpenSSL cannot offer (RC4...): our own ClientHello offers them all
        preference = hello_preference.probe_preference_by_hello(endpoint, protocol, accepted)
    else:
        preference = (probes.preference_observed(observation, protocol, accepted)
                      or probes.probe_preference(endpoint, protocol, accepted))
    scan.report(name, DONE if preference.enforced is not None else SKIPPED)
    return preference


def measure_hsts(endpoint: probes.Endpoint):
    try:
        answer = probes.fetch_hsts_header(endpoint)
    except DeadlineExceeded as exc:  # a response trickled, or the audit's time ran out
        return None, Check(NOT_TESTED, reason=f"Our HTTP request for / got no complete answer: {exc}, so the "
                                              "HSTS header could not be read.")
    except TimeoutError:  # a server that completes handshakes, then never answers HTTP
        return None, Check(NOT_TESTED, reason=f"The server did not answer our HTTP request for / within "
                                              f"{endpoint.timeout:g} s, so its HSTS header could not be read.")
    except (OSError, ValueError) as exc:
        reason = f"The HTTP request to read HSTS failed: {probes.short_error(exc)}"
        return None, Check(NOT_TESTED, reason=reason)
    hsts = parse_hsts(answer.hsts_header) or Hsts(header=None, max_age=None)
    return hsts, convert.hsts_check(hsts)


# --- bookkeeping: timings and progress -------------------------------------------------------------

class _Scan:
    def __init__(self, on_progress: ProgressCallback | None):
        self.on_progress = on_progress
        self.start = time.monotonic()
        self.timings: dict[str, float] = {}
        self._phase_start: dict[str, float] = {}

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    @contextmanager
    def phase(self, name: str, report: bool = True) -> Iterator[None]:
        """Time a phase; report started/done/error unless the caller reports a richer outcome itself."""
        began = time.monotonic()
        self._phase_start[name] = began
        self.report(name, STARTED)
        try:
            yield
        except Exception:
            self.timings[name] = round(time.monotonic() - began, 3)
            self.report(name, ERROR)
            raise
        self.timings[name] = round(time.monotonic() - began, 3)
        if report:
            self.report(name, DONE)

    def mark(self, name: str) -> None:
        """Time from the start of the sslyze phase to an event inside it (connectivity)."""
        began = self._phase_start.get("sslyze", self.start)
        self.timings[name] = round(time.monotonic() - began, 3)

    def report(self, name: str, status: str) -> None:
        """Progress is best effort: a failing callback must not break sslyze's threads mid-scan."""
        if self.on_progress is None:
            return
        try:
            self.on_progress(name, status)
        except Exception:
            log.exception("on_progress(%r, %r) failed", name, status)

    def outcome(self, facts: ScanFacts | None, **kwargs) -> ScanOutcome:
        return ScanOutcome(facts=facts, duration_s=round(self.elapsed(), 3), timings=dict(self.timings), **kwargs)
