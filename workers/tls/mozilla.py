"""sslyze's Mozilla TLS configuration checker (guidelines v5.7), run on the live result.

It cannot run on stored JSON (it needs sslyze's dataclasses), so the report is kept next to the facts.
"""

from __future__ import annotations

PROFILES = ("modern", "intermediate", "old")


def mozilla_report(server_scan_result) -> dict[str, dict]:
    """profile -> {"compliant": True/False/None, "issues": {criterion: text}, "error": why None}."""
    from sslyze.mozilla_tls_profile.tls_config_checker import (
        MozillaTlsConfiguration,
        ServerNotCompliantWithTlsConfiguration,
        ServerScanResultIncomplete,
        TlsConfigurationEnum,
        check_server_against_tls_configuration,
    )

    report = {}
    for profile in PROFILES:
        entry = {"compliant": True, "issues": {}, "error": ""}
        try:
            check_server_against_tls_configuration(
                server_scan_result, MozillaTlsConfiguration.get(TlsConfigurationEnum(profile)))
        except ServerNotCompliantWithTlsConfiguration as exc:
            entry = {"compliant": False, "issues": {k: str(v) for k, v in exc.issues.items()}, "error": ""}
        except ServerScanResultIncomplete as exc:
            entry = {"compliant": None, "issues": {}, "error": str(exc)}
        report[profile] = entry
    return report


def untested_report(reason: str) -> dict[str, dict]:
    return {profile: {"compliant": None, "issues": {}, "error": reason} for profile in PROFILES}
