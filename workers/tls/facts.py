"""sslyze's `AllScanCommandsAttempts` -> the parts of `ScanFacts` sslyze can tell us.

Every command that did not complete becomes NOT_TESTED with sslyze's reason, never a pass.
"""

from __future__ import annotations

from tlsaudit.domain.scanfacts import BAD, CHECK_NAMES, NOT_TESTED, OK, CertificateDeployment, Check, CipherSuite, Hsts
from workers.tls.certs import describe_deployment

# sslyze command -> our protocol label (scanfacts.PROTOCOLS)
SUITE_COMMANDS = {
    "ssl_2_0_cipher_suites": "SSLv2",
    "ssl_3_0_cipher_suites": "SSLv3",
    "tls_1_0_cipher_suites": "TLSv1.0",
    "tls_1_1_cipher_suites": "TLSv1.1",
    "tls_1_2_cipher_suites": "TLSv1.2",
    "tls_1_3_cipher_suites": "TLSv1.3",
}
# The message sslyze gives a suite test whose handshake timed out; it then counts the suite as rejected.
HANDSHAKE_TIMEOUT_TEXT = "timed out during the TLS handshake"

# Named check -> (sslyze command, function of its result returning (ok, detail, value)).
_CHECK_RULES = {
    "heartbleed": ("heartbleed", lambda r: (not r.is_vulnerable_to_heartbleed, "", None)),
    "ccs_injection": ("openssl_ccs_injection", lambda r: (not r.is_vulnerable_to_ccs_injection, "", None)),
    "compression": ("tls_compression", lambda r: (not r.supports_compression, "", None)),
    "fallback_scsv": ("tls_fallback_scsv", lambda r: (r.supports_fallback_scsv, "", None)),
    "secure_renegotiation": ("session_renegotiation", lambda r: (r.supports_secure_renegotiation, "", None)),
    "client_renegotiation": ("session_renegotiation", lambda r: (
        not r.is_vulnerable_to_client_renegotiation_dos,
        f"{r.client_renegotiations_success_count} client-initiated renegotiation(s) accepted",
        r.client_renegotiations_success_count)),
    "early_data": ("tls_1_3_early_data", lambda r: (not r.supports_early_data, "", None)),
    "extended_master_secret": ("tls_extended_master_secret", lambda r: (r.supports_ems_extension, "", None)),
}


def attempt_reason(attempt) -> str:
    """Why a command did not complete, in one line: sslyze's reason plus the exception's last line."""
    if attempt.status.value == "NOT_SCHEDULED":
        return "not scheduled"
    reason = attempt.error_reason.value if attempt.error_reason else "ERROR"
    if attempt.error_trace is not None:
        last = "".join(attempt.error_trace.format_exception_only()).strip().splitlines()
        if last:
            return f"{reason}: {last[-1]}"
    return reason


def completed(attempt) -> bool:
    return attempt.status.value == "COMPLETED"


def command_errors(scan_result) -> dict[str, str]:
    return {name: attempt_reason(getattr(scan_result, name))
            for name in _command_names(scan_result) if not completed(getattr(scan_result, name))}


def _command_names(scan_result) -> list[str]:
    return list(type(scan_result).__dataclass_fields__)


# --- protocols and suites -------------------------------------------------------------------

def protocol_checks(scan_result) -> dict[str, Check]:
    checks = {}
    for command, protocol in SUITE_COMMANDS.items():
        attempt = getattr(scan_result, command)
        checks[protocol] = _protocol_check(attempt)
    return checks


def _protocol_check(attempt) -> Check:
    if not completed(attempt):
        return Check(NOT_TESTED, reason=attempt_reason(attempt))
    accepted = len(attempt.result.accepted_cipher_suites)
    if attempt.result.is_tls_version_supported:
        return Check(OK, detail=f"{accepted} cipher suite(s) accepted", value=accepted)
    return Check(BAD, detail="not supported", value=0)


def accepted_suites(scan_result) -> list[CipherSuite]:
    suites = []
    for command, protocol in SUITE_COMMANDS.items():
        attempt = getattr(scan_result, command)
        if completed(attempt):
            suites.extend(describe_suite(a, protocol) for a in attempt.result.accepted_cipher_suites)
    return suites


def describe_suite(accepted, protocol: str) -> CipherSuite:
    suite, key = accepted.cipher_suite, accepted.ephemeral_key
    return CipherSuite(
        name=suite.name,
        openssl_name=suite.openssl_name,
        protocol=protocol,
        key_size=suite.key_size,
        is_anonymous=suite.is_anonymous,
        kx_type=key.type_name if key is not None else None,
        kx_bits=key.size if key is not None else None,
        kx_curve=getattr(key, "curve_name", None) if key is not None else None,
    )


def count_timed_out_suite_tests(scan_result) -> int:
    total = 0
    for command in SUITE_COMMANDS:
        attempt = getattr(scan_result, command)
        if completed(attempt):
            total += sum(HANDSHAKE_TIMEOUT_TEXT in (r.error_message or "")
                         for r in attempt.result.rejected_cipher_suites)
    return total


# --- curves, certificates, HSTS ---------------------------------------------------------------

def curve_facts(scan_result) -> tuple[list[str], Check]:
    attempt = scan_result.elliptic_curves
    if not completed(attempt):
        return [], Check(NOT_TESTED, reason=attempt_reason(attempt))
    result = attempt.result
    curves = [c.name for c in (result.supported_curves or [])]
    if not result.supports_ecdh_key_exchange:
        return [], Check(BAD, detail="No ECDH key exchange supported.")
    return curves, Check(OK, detail=f"{len(curves)} group(s) accepted: {', '.join(curves)}", value=curves)


def certificate_deployments(scan_result, hostname: str) -> list[CertificateDeployment]:
    attempt = scan_result.certificate_info
    if not completed(attempt):
        return []
    return [describe_deployment(d, hostname) for d in attempt.result.certificate_deployments]


def hsts_check(hsts: Hsts) -> Check:
    if hsts.header is None:
        return Check(BAD, detail="No Strict-Transport-Security header.")
    if not hsts.valid:
        return Check(BAD, detail=f"Strict-Transport-Security header is invalid: {hsts.header!r}")
    if hsts.max_age == 0:
        return Check(BAD, detail="max-age=0 tells browsers to forget HSTS.", value=0)
    return Check(OK, detail=f"max-age={hsts.max_age}", value=hsts.max_age)


# --- named checks ---------------------------------------------------------------------------

def named_checks(scan_result) -> dict[str, Check]:
    checks = {name: _rule_check(scan_result, *rule) for name, rule in _CHECK_RULES.items()}
    checks["robot"] = robot_check(scan_result.robot)
    # Resumption is ours, probed beside sslyze (workers/tls/resumption.py); the engine fills these in.
    for name in ("session_id_resumption", "session_ticket_resumption", "tls13_resumption"):
        checks[name] = Check(NOT_TESTED, reason="Session resumption was not probed.")
    assert set(checks) == set(CHECK_NAMES), "every named check must be filled"
    return checks


def _rule_check(scan_result, command: str, rule) -> Check:
    attempt = getattr(scan_result, command)
    if not completed(attempt):
        return Check(NOT_TESTED, reason=attempt_reason(attempt))
    ok, detail, value = rule(attempt.result)
    return Check(OK if ok else BAD, detail=detail, value=value)


def robot_check(attempt) -> Check:
    if not completed(attempt):
        return Check(NOT_TESTED, reason=attempt_reason(attempt))
    verdict = attempt.result.robot_result.name
    if verdict.startswith("NOT_VULNERABLE"):
        return Check(OK, detail=verdict, value=verdict)
    if verdict.startswith("VULNERABLE"):
        return Check(BAD, detail=verdict, value=verdict)
    return Check(NOT_TESTED, reason="The ROBOT test gave inconsistent results.", value=verdict)


def client_auth(server_scan_result) -> str | None:
    """Whether the server asks for a client certificate, as sslyze's connectivity test saw it."""
    probing = getattr(server_scan_result, "connectivity_result", None)
    requirement = getattr(probing, "client_auth_requirement", None)
    return {"DISABLED": "not_required", "OPTIONAL": "optional", "REQUIRED": "required"}.get(
        getattr(requirement, "name", ""))
