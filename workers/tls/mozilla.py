"""sslyze's Mozilla TLS configuration checker, run on the live result against *our* pinned guidelines.

sslyze 6.3 bundles guidelines 5.7; we pin Mozilla's newest (tlsaudit.domain.mozilla), so its checker
gets the same file our own checker reads. sslyze's model wants Caddy and Go cipher lists and an "old"
profile, which 6.0 no longer has: Go and Caddy take the IANA names (as in Mozilla's generator), and the
checker reads only the IANA list. It cannot run on stored JSON (it needs sslyze's dataclasses), so the
report is kept next to the facts.
"""

from __future__ import annotations

import json
from functools import cache

from tlsaudit.domain.mozilla import GUIDELINES_VERSION, PROFILE_NAMES, guidelines_text

PROFILES = PROFILE_NAMES


@cache
def sslyze_configuration(profile: str):
    """sslyze's TlsConfigurationAsJson for `profile` of the pinned guidelines."""
    from sslyze.mozilla_tls_profile.tls_config_checker import TlsConfigurationAsJson

    config = dict(json.loads(guidelines_text())["configurations"][profile])
    iana = config["ciphers"]["iana"]
    config["ciphers"] = {"go": iana, "caddy": iana, **config["ciphers"]}
    return TlsConfigurationAsJson(**config)


def mozilla_report(server_scan_result) -> dict[str, dict]:
    """profile -> {"compliant": True/False/None, "issues": {criterion: text}, "error": why None,
    "guidelines": the version judged against}."""
    from sslyze.mozilla_tls_profile.tls_config_checker import (
        ServerNotCompliantWithTlsConfiguration,
        ServerScanResultIncomplete,
        check_server_against_tls_configuration,
    )

    report = {}
    for profile in PROFILES:
        entry = {"compliant": True, "issues": {}, "error": ""}
        try:
            check_server_against_tls_configuration(server_scan_result, sslyze_configuration(profile))
        except ServerNotCompliantWithTlsConfiguration as exc:
            entry = {"compliant": False, "issues": {k: str(v) for k, v in exc.issues.items()}, "error": ""}
        except ServerScanResultIncomplete as exc:
            entry = {"compliant": None, "issues": {}, "error": str(exc)}
        report[profile] = {**entry, "guidelines": GUIDELINES_VERSION}
    return report


def untested_report(reason: str) -> dict[str, dict]:
    return {profile: {"compliant": None, "issues": {}, "error": reason, "guidelines": GUIDELINES_VERSION}
            for profile in PROFILES}
