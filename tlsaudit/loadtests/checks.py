"""What a performance run may be: its parameters checked and filled in, fitted to the organization's caps,
and the site allowed (verified, and a service the tool applies to). Every caller gets these checks through
`services.queue_run`; the API's serializers read the defaults from here."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from tlsaudit.domain.applicability import not_applicable_reason
from tlsaudit.loadtests import plans
from tlsaudit.loadtests import verification as proofs
from tlsaudit.loadtests.models import LoadLimits, PerfRun

# Defaults that fit the shipped caps (120 s): a sweep's 52 runs at 1.5 s, a handshake plan's 56 cells at 1 s
# (every candidate suite counted). The single visitor (c=1) first.
DEFAULT_LEVELS = (1, 20, 50, 100)


DEFAULT_AGENTS_LEVELS = (10, 50)


DEFAULT_REPEATS = 3          # per cell: the fewest that give a 95 % interval (stats.median_interval)


# 20 handshakes per agent: a TLS 1.3 cell over a 50 ms round trip lasts ~1.1 s.
DEFAULT_PER_AGENT = 20


MAX_REPEATS = 10


class RunRefused(Exception):
    """Why a run may not start, in words for the site owner (`code` is stable for the API)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def validate_params(kind: str, raw: dict) -> dict:
    """Normalised params of a run of `kind`, or RunRefused("invalid_params")."""
    try:
        return VALIDATORS[kind](raw)
    except KeyError as exc:
        raise RunRefused("invalid_params", f"Unknown run kind or missing field: {exc}.") from None
    except (TypeError, ValueError) as exc:
        raise RunRefused("invalid_params", str(exc)) from None


def positive(raw: dict, name: str, default: int) -> int:
    value = int(raw.get(name, default))
    if value < 1:
        raise ValueError(f"{name} must be at least 1.")
    return value


def int_list(raw: dict, name: str, default) -> list[int]:
    value = raw.get(name, default)
    if isinstance(value, str):
        value = [v for v in value.replace(" ", "").split(",") if v]
    numbers = sorted({int(v) for v in value})
    if not numbers or numbers[0] < 1:
        raise ValueError(f"{name} must list positive whole numbers.")
    return numbers


def seconds_of(raw: dict) -> float:
    value = float(raw.get("seconds", plans.RUN_TIME_LIMIT_S))
    if not plans.MIN_RUN_SECONDS <= value <= plans.MAX_RUN_SECONDS:
        raise ValueError(f"seconds must be between {plans.MIN_RUN_SECONDS:g} and {plans.MAX_RUN_SECONDS:g}.")
    return value


def repeats_of(raw: dict) -> int:
    value = positive(raw, "repeats", DEFAULT_REPEATS)
    if value > MAX_REPEATS:
        raise ValueError(f"repeats must be between 1 and {MAX_REPEATS}.")
    return value


def clean_path(raw: dict) -> str:
    path = str(raw.get("path") or "/")
    if not path.startswith("/") or any(c.isspace() for c in path) or len(path) > 500:
        raise ValueError("path must start with / and contain no spaces.")
    return path


def validate_load(raw: dict) -> dict:
    params = {"scheme": str(raw.get("scheme", "https")), "requests": positive(raw, "requests", 100),
              "concurrency": positive(raw, "concurrency", 1), "keepalive": bool(raw.get("keepalive", False)),
              "path": clean_path(raw), "timeout_s": float(raw.get("timeout_s", 10)), "repeats": repeats_of(raw),
              "seconds": seconds_of(raw)}
    if params["scheme"] not in ("http", "https"):
        raise ValueError("scheme must be http or https.")
    if params["concurrency"] > params["requests"]:
        raise ValueError("concurrency cannot exceed the number of requests (as with ab).")
    if not 0.5 <= params["timeout_s"] <= 60:
        raise ValueError("timeout_s must be between 0.5 and 60 seconds.")
    return params


def validate_sweep(raw: dict) -> dict:
    modes = raw.get("modes") or ["new", "keepalive"]  # the seeds measured both modes
    modes = [modes] if isinstance(modes, str) else list(modes)
    if not set(modes) <= {"new", "keepalive"}:
        raise ValueError("modes must be new and/or keepalive.")
    params = {"levels": int_list(raw, "levels", DEFAULT_LEVELS), "requests": positive(raw, "requests", 500),
              "modes": [m for m in ("new", "keepalive") if m in modes], "path": clean_path(raw),
              "repeats": repeats_of(raw), "seconds": seconds_of(raw)}
    if params["levels"][-1] > params["requests"]:
        raise ValueError("each level's concurrency cannot exceed the requests per level.")
    return params


def validate_handshakes(raw: dict) -> dict:
    versions = raw.get("versions") or ["1.2", "1.3"]
    versions = [versions] if isinstance(versions, str) else list(versions)
    if not versions or not set(versions) <= {"1.2", "1.3"}:
        raise ValueError("versions must be 1.2 and/or 1.3.")
    suites = raw.get("suites") or []
    return {"versions": [v for v in ("1.2", "1.3") if v in versions],
            "agents_levels": int_list(raw, "agents_levels", DEFAULT_AGENTS_LEVELS),
            "per_agent": positive(raw, "per_agent", DEFAULT_PER_AGENT), "resume": bool(raw.get("resume", False)),
            "suites": [str(s) for s in suites], "repeats": repeats_of(raw), "seconds": seconds_of(raw)}


VALIDATORS = {PerfRun.Kind.LOAD: validate_load, PerfRun.Kind.SWEEP: validate_sweep,
              PerfRun.Kind.HANDSHAKES: validate_handshakes}


def check_caps(kind: str, params: dict, limits: LoadLimits) -> None:
    """Each refusal names the cap and the organization's value."""
    org = limits.organization.name
    concurrency, per_run = peak_concurrency(kind, params), requests_per_step(kind, params)
    if concurrency > limits.max_concurrency:
        raise RunRefused("cap_concurrency", f"Concurrency {concurrency} is above {org}'s maximum concurrency of "
                                            f"{limits.max_concurrency} connections.")
    if per_run > limits.max_requests_per_run:
        what = "handshakes per cell" if kind == PerfRun.Kind.HANDSHAKES else "requests per run"
        raise RunRefused("cap_requests", f"{per_run} {what} is above {org}'s maximum of "
                                         f"{limits.max_requests_per_run} requests per run.")
    check_duration(kind, params, limits)
    since = timezone.now() - timedelta(days=1)
    today = PerfRun.objects.filter(organization=limits.organization, created_at__gte=since).count()
    if today >= limits.runs_per_day:
        raise RunRefused("cap_runs_per_day", f"{org} already started {today} runs in the last 24 hours: the maximum "
                                             f"is {limits.runs_per_day} runs per day.")


def fitted_seconds(kind: str, params: dict, max_duration_s: int) -> dict:
    """A run that asked for no duration per run gets the longest of plans.FITTING_SECONDS that fits the
    organization's maximum duration (the shortest when none does: check_caps then says why)."""
    for seconds in plans.FITTING_SECONDS:
        fitted = {**params, "seconds": seconds}
        if plans.bound_s(kind, fitted) <= max_duration_s:
            return fitted
    return {**params, "seconds": plans.FITTING_SECONDS[-1]}


def check_duration(kind: str, params: dict, limits: LoadLimits) -> None:
    """Refused up front, with what would fit, when the plan can outlast the organization's maximum."""
    bound = plans.bound_s(kind, params)
    if bound <= limits.max_duration_s:
        return
    steps = len(plans.steps_of(kind, params))
    fits = (limits.max_duration_s - plans.RUN_OVERHEAD_S) / steps - plans.STEP_OVERHEAD_S
    hint = (f"at most {fits:.1f} s per run would fit" if fits >= plans.MIN_RUN_SECONDS else
            "fewer levels, suites, agents levels or repeats would fit")
    raise RunRefused("cap_duration", f"This plan can take up to {bound:.0f} s ({steps} runs of at most "
                                     f"{params['seconds']:g} s each, plus set-up): above {limits.organization.name}'s "
                                     f"maximum duration of {limits.max_duration_s} s per run. {hint[0].upper()}"
                                     f"{hint[1:]}.")


def peak_concurrency(kind: str, params: dict) -> int:
    if kind == PerfRun.Kind.LOAD:
        return params["concurrency"]
    if kind == PerfRun.Kind.SWEEP:
        return max(params["levels"])
    return max(params["agents_levels"])


def requests_per_step(kind: str, params: dict) -> int:
    if kind == PerfRun.Kind.HANDSHAKES:
        return max(params["agents_levels"]) * params["per_agent"]
    return params["requests"]


def ensure_verified(site) -> None:
    """Refuse unless the owner proved control; a proof older than VERIFICATION_MAX_AGE_DAYS is re-checked."""
    verification = proofs.host_proof(site)
    if verification.is_verified and verification.is_stale:
        proofs.check_now(verification.site, verification.method or None)  # the site whose proof it is
        verification = proofs.host_proof(site)
        if not verification.is_verified:
            raise RunRefused("unverified", f"{site.label}'s ownership proof expired and the re-check failed: "
                                           f"{verification.last_error}")
    reason = unverified_reason(site, verification)
    if reason:
        raise RunRefused("unverified", reason)


def unverified_reason(site, verification=None) -> str | None:
    """Why no run may go to `site` as it is now (None: its proof holds); no network, so the worker can
    ask again when it takes the run (the site may have been edited while the run was queued)."""
    verification = verification or proofs.host_proof(site)
    if verification.is_verified:
        return None
    if verification.site_changed:
        return (f"{site.label} changed since its owner proved control (host name, ports or pinned IP): the proof "
                "covered the old address. Check it again on the verification page.")
    return (f"{site.label} is not verified: load tests and handshake runs only go to sites whose owner proved "
            "control. Serve the verification file or add the DNS TXT record, then press \"Check now\" on the "
            "verification page.")


def ensure_applicable(site, kind: str) -> None:
    """Refuse a run that means nothing for the site's service (a load test of an SMTP server)."""
    reason = not_applicable_reason(site.tls_service, kind)
    if reason:
        raise RunRefused("not_applicable", reason)
