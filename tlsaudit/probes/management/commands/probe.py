"""python manage.py probe URL [--ip IP] [--ca-file PEM] [--seconds S] [--runs K] [--timeout S] [--deadline S]
[--https-port N] [--http-port N] [--json]

Loads URL's page in Debian's Chromium over HTTPS and over HTTP, cold and warm, round after round
(workers.browser.probe.run_probe) now, without a worker or the database: for --seconds (default 20,
like ab -t; at least 3 rounds, which an interval needs), at most --runs rounds. The plan's longest
time is printed before it starts. The other scheme uses --https-port / --http-port, by default its
default port (443 / 80).
Exit 0 when the probe ran, 2 on bad arguments, when the pre-flight
handshake (or TCP connect, for http://) fails as for a probe from the app, or when the probe failed,
the probe's deadline included (default CLI_DEADLINE_SECONDS); with --json: {"error": {"code",
"message"}}. The target passes the SSRF guard like `audit`.
"""

import math
from urllib.parse import urlsplit

from tlsaudit.core.management.base import (
    TARGET_HELP,
    TargetCommand,
    as_url,
    parse_int,
    parse_ip,
    reach,
    read_ca_file,
    side_ports,
)
from tlsaudit.core.standalone import setting
from tlsaudit.core.terminal import startup_line, startup_s
from tlsaudit.domain.hostnames import AddressError, normalize_hostname
from tlsaudit.domain.probe_stats import SETUP_S, medians
from tlsaudit.domain.stats import change_text
from workers.browser.probe import run_probe
from workers.browser.spec import ProbeSpec

MAX_RUNS = 50
DEFAULT_SECONDS = 20
MAX_SECONDS = 600
MAX_TIMEOUT_S = 120
MAX_DEADLINE_S = 3600
COLUMNS = ("variant", "mode", "proto", "req", "bytes", "cached", "304", "dns", "connect", "tls", "ttfb",
           "DCL", "load")


class Command(TargetCommand):
    help = "Time real Chromium page loads of URL over HTTPS vs HTTP, cold vs warm (text table, or JSON)."

    def add_arguments(self, parser):
        parser.add_argument("url", nargs="?", default="", help=TARGET_HELP)
        self.add_ip_argument(parser)
        self.add_ca_file_argument(parser, help="PEM file of CA certificates for the browser to trust")
        parser.add_argument("--seconds", default=str(DEFAULT_SECONDS),
                            help="time for the measured rounds, like ab -t (default %(default)s; at least 3 rounds run)")
        parser.add_argument("--runs", default="20",
                            help="at most K rounds: K loads of each variant x mode (default %(default)s)")
        parser.add_argument("--timeout", default=str(setting("PROBE_LOAD_TIMEOUT")),
                            help="seconds per page load (default %(default)s)")
        parser.add_argument("--deadline", default=None,
                            help="the whole probe ends within this many seconds, done or with an error (default: "
                                 f"its --seconds + {SETUP_S} s + 30 s, at least {setting('CLI_DEADLINE_SECONDS')})")
        parser.add_argument("--https-port", help="port of the HTTPS variant when URL is http:// (default 443)")
        parser.add_argument("--http-port", help="port of the HTTP variant when URL is https:// (default 80)")
        self.add_json_argument(parser)

    def parse(self, options):
        spec_kwargs = parse_arguments(options)
        return ProbeSpec(**spec_kwargs), options["_scheme"]

    def run(self, plan):
        spec, scheme = plan
        problem = preflight(spec, scheme)
        if problem is not None:
            self.fail(problem.code, problem.message)
        startup = startup_s()
        progress = self.progress(unit="page loads")
        progress.note(plan_line(spec))
        result = run_probe(spec, allow_private=setting("ALLOW_PRIVATE_TARGETS"),
                           on_progress=lambda done, total, _load: progress(done, total))
        progress.finish(len(result["loads"]))
        result["startup_s"] = startup
        if result["error"] is not None:
            self.fail(result["error"]["code"], result["error"]["message"], result=result)
        self.finish(cli_json(result, scheme) if self.as_json else render_text(result))


def parse_arguments(options) -> dict:
    """ProbeSpec keyword arguments; ValueError with a message naming the bad argument."""
    url = as_url(options["url"])
    if not url:
        raise ValueError("URL: give the page to probe, e.g. https://example.com/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"URL: {url!r} must start with https:// or http://")
    if parts.username or parts.password:
        raise ValueError("URL: credentials in the URL are not supported")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"URL: {url!r} has an invalid port (1-65535)") from None
    if port == 0:
        raise ValueError(f"URL: {url!r} has an invalid port (1-65535)")
    try:
        host = normalize_hostname(parts.hostname or "")
    except AddressError as exc:
        raise ValueError(f"URL: {exc}") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    options["_scheme"] = parts.scheme
    kwargs = {"host": host, "path": path, "ip": parse_ip(options.get("ip")),
              "ca_pem": read_ca_pem(options.get("ca_file")), "runs": parse_int(options["runs"], "--runs", 1, MAX_RUNS),
              "seconds": parse_seconds(options.get("seconds") or DEFAULT_SECONDS, "--seconds", MAX_SECONDS),
              "timeout_s": parse_seconds(options["timeout"], "--timeout", MAX_TIMEOUT_S),
              "deadline_s": parse_seconds(options["deadline"], "--deadline", MAX_DEADLINE_S) if options.get("deadline")
              else default_deadline(float(options.get("seconds") or DEFAULT_SECONDS))}
    kwargs.update(variant_ports(parts.scheme, port, options))
    return kwargs


def variant_ports(scheme: str, url_port: int | None, options) -> dict:
    """The target's port for its scheme, --https-port / --http-port for the other (`side_ports`)."""
    ports = side_ports(scheme, url_port, {"https": parse_port("--https-port", options.get("https_port")),
                                          "http": parse_port("--http-port", options.get("http_port"))})
    return {"https_port": ports["https"], "http_port": ports["http"]}


def parse_port(option: str, text) -> int | None:
    if text in (None, ""):
        return None
    try:
        port = int(str(text).strip())
    except ValueError:
        raise ValueError(f"{option}: {text!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise ValueError(f"{option} must be between 1 and 65535, got {port}")
    return port


def read_ca_pem(name) -> str | None:
    """The PEM text Chromium is given to trust (its first megabyte, as read_ca_file checked it)."""
    return read_ca_file(name).decode("ascii", errors="replace") if name else None


def parse_seconds(text, option: str, high: int) -> float:
    """From 1 to `high` seconds, fractions allowed."""
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ValueError(f"{option}: {text!r} is not a number of seconds") from None
    if not math.isfinite(value) or not 1 <= value <= high:
        raise ValueError(f"{option} must be between 1 and {high} seconds, got {text}")
    return value


def default_deadline(seconds: float) -> float:
    """The plan's time, the browser's start and a margin: a longer --seconds is not cut by the usual 50 s."""
    return max(float(setting("CLI_DEADLINE_SECONDS")), seconds + SETUP_S + 30)


def planned_s(spec: ProbeSpec) -> float:
    """The longest the probe should take: its rounds' time, the browser's start and the warm-ups (a
    round that starts fits in what is left), the deadline at most."""
    return min(spec.deadline_s or math.inf, spec.seconds + SETUP_S)


def plan_line(spec: ProbeSpec) -> str:
    return (f"Plan: HTTPS and HTTP, cold and warm, round after round for {spec.seconds:g} s (3 to {spec.runs} "
            f"rounds): about {planned_s(spec):.0f} s with the browser's start")


def preflight(spec, scheme: str):
    """The app's pre-flight of the URL's scheme, on the checked address: a TargetError, or None. It
    resolves (through the SSRF guard) only to connect: the engine's guard pins the page itself. A name
    that does not resolve or an address the guard refuses ends here, before Chromium starts."""
    port = spec.https_port if scheme == "https" else spec.http_port
    _target, error = reach(spec.host, port, spec.ip, tls=scheme == "https")
    return error


def cli_json(result: dict, scheme: str) -> dict:
    """`cold` and `warm` (medians for the URL's scheme), both variants, the increase row, the full result."""
    summary = result["summary"]
    variants = {v: {m: medians(summary.get(f"{v}_{m}")) for m in ("cold", "warm")}
                for v in ("https", "http") if f"{v}_cold" in summary}
    chosen = variants.get(scheme) or {"cold": medians(None), "warm": medians(None)}
    return {"url_scheme": scheme, "cold": chosen["cold"], "warm": chosen["warm"], "variants": variants,
            "increase_pct": result["increase_pct"], "increase": result.get("increase") or {},
            "variant_errors": result["variant_errors"],
            "browser": result["browser"], "duration_s": result["duration_s"], "startup_s": result.get("startup_s"),
            "planned_s": planned_s(ProbeSpec(**result["spec"])), "rounds": rounds_of(result),
            "result": result}


def rounds_of(result: dict) -> int:
    return len({load["run"] for load in result["loads"] if not load.get("warmup")})


def rounds_text(count: int) -> str:
    return f"{count} round{'' if count == 1 else 's'}"


def render_text(result: dict) -> str:
    """One row per variant x mode (medians), then the increase % row per mode."""
    rows = [COLUMNS]
    for key, cell in result["summary"].items():
        m = medians(cell)
        t = m["timings_ms"]
        variant, mode = key.split("_")
        rows.append((variant, mode, m["protocol"], m["requests"], m["bytes"], m["from_cache"], m["not_modified"],
                     t["dns"], t["connect"], t["tls"], t["ttfb"], t["dom_content_loaded"], t["load"]))
    widths = [max(len(fmt(r[i])) for r in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(fmt(v).rjust(w) for v, w in zip(row, widths)) for row in rows]
    spec = result["spec"]
    lines.insert(0, f"Browser probe of https://{spec['host']}:{spec['https_port']}{spec['path']} and "
                    f"http://{spec['host']}:{spec['http_port']}{spec['path']}: "
                    f"{rounds_text(rounds_of(result))} in {spec['seconds']:g} s (medians, ms), "
                    f"Chromium {result['browser']['version']}, {result['duration_s']:.1f} s")
    for mode, row in result["increase_pct"].items():
        if row:
            shown = ", ".join(f"{k} {fmt(v)}%" for k, v in row.items() if v is not None)
            lines.append(f"HTTPS over HTTP, {mode} (medians): {shown}")
    for mode, row in (result.get("increase") or {}).items():
        for metric in ("tls", "ttfb", "load"):
            if metric in row:
                change = row[metric]
                lines.append(f"HTTPS vs HTTP, {mode} {metric} (median of the loads, HTTP {fmt(change['base_median'])} "
                             f"ms, HTTPS {fmt(change['other_median'])} ms): {change_text(change)}")
    for variant, error in result["variant_errors"].items():
        lines.append(f"{variant} failed: {error['message']}")
    if result.get("startup_s") is not None:
        lines.append(startup_line(result["startup_s"]))
    return "\n".join(lines) + "\n"


def fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)
