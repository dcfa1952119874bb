"""python manage.py probe URL [--ip IP] [--ca-file PEM] [--runs K] [--timeout S] [--deadline S]
[--https-port N] [--http-port N] [--json]

Loads URL's page in Debian's Chromium over HTTPS and over HTTP, cold and warm, K times each
(workers.browser.probe.run_probe) now, without a worker or the database. The other scheme uses
--https-port / --http-port, by default its default port (443 / 80).
Exit 0 when the probe ran, 2 on bad arguments, when the pre-flight
handshake (or TCP connect, for http://) fails as for a probe from the app, or when the probe failed,
the probe's deadline included (default CLI_DEADLINE_SECONDS); with --json: {"error": {"code",
"message"}}. The target passes the SSRF guard like `audit`.
"""

import ipaddress
import json
import math
import sys
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand

from tlsaudit.core.terminal import Progress, failure_text, startup_line, startup_s
from tlsaudit.domain.hostnames import AddressError, normalize_hostname
from tlsaudit.domain.probe_stats import medians
from tlsaudit.domain.stats import change_text

EXIT_OK, EXIT_FAILED = 0, 2
MAX_RUNS = 50
MAX_TIMEOUT_S = 120
MAX_DEADLINE_S = 3600
COLUMNS = ("variant", "mode", "proto", "req", "bytes", "cached", "304", "dns", "connect", "tls", "ttfb",
           "DCL", "load")


class Command(BaseCommand):
    help = "Time real Chromium page loads of URL over HTTPS vs HTTP, cold vs warm (text table, or JSON)."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("url", nargs="?", default="", help="https://HOST[:PORT]/path or http://...")
        parser.add_argument("--ip", help="connect to this IP instead of resolving HOST")
        parser.add_argument("--ca-file", help="PEM file of CA certificates for the browser to trust")
        parser.add_argument("--runs", default="5", help="K loads of each variant x mode (default %(default)s)")
        parser.add_argument("--timeout", default=str(settings.PROBE_LOAD_TIMEOUT),
                            help="seconds per page load (default %(default)s)")
        parser.add_argument("--deadline", default=str(settings.CLI_DEADLINE_SECONDS),
                            help="the whole probe ends within this many seconds, done or with an error "
                                 "(default %(default)s)")
        parser.add_argument("--https-port", help="port of the HTTPS variant when URL is http:// (default 443)")
        parser.add_argument("--http-port", help="port of the HTTP variant when URL is https:// (default 80)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **options):
        self.as_json = options["json"]
        try:
            spec_kwargs = parse_arguments(options)
        except ValueError as exc:
            return self.fail("invalid_argument", str(exc))
        from workers.browser.probe import run_probe  # loads Playwright: only for this command
        from workers.browser.spec import ProbeSpec

        spec = ProbeSpec(**spec_kwargs)
        problem = preflight(spec, options["_scheme"])
        if problem is not None:
            return self.fail(problem.code, problem.message)
        startup = startup_s()
        progress = Progress.for_command(self, self.as_json, unit="page loads")
        result = run_probe(spec, allow_private=settings.ALLOW_PRIVATE_TARGETS,
                           on_progress=lambda done, total, _load: progress(done, total))
        progress.finish(len(result["loads"]))
        result["startup_s"] = startup
        if result["error"] is not None:
            return self.fail(result["error"]["code"], result["error"]["message"], result=result)
        scheme = options["_scheme"]
        if self.as_json:
            self.stdout.write(json.dumps(cli_json(result, scheme), indent=2))
        else:
            self.stdout.write(render_text(result))
        sys.exit(EXIT_OK)

    def fail(self, code: str, message: str, **extra):
        if self.as_json:
            self.stdout.write(json.dumps({"error": {"code": code, "message": failure_text(code, message)}, **extra}, indent=2))
        else:
            self.stderr.write(f"probe failed: {failure_text(code, message)}")
        sys.exit(EXIT_FAILED)


def parse_arguments(options) -> dict:
    """ProbeSpec keyword arguments; ValueError with a message naming the bad argument."""
    url = (options["url"] or "").strip()
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
              "ca_pem": read_ca_file(options.get("ca_file")), "runs": parse_runs(options["runs"]),
              "timeout_s": parse_timeout(options["timeout"]), "deadline_s": parse_deadline(options["deadline"])}
    kwargs.update(variant_ports(parts.scheme, port, options))
    return kwargs


def variant_ports(scheme: str, url_port: int | None, options) -> dict:
    """The URL's port for its scheme, --https-port / --http-port for the other (default 443 / 80).
    An option naming the URL's own scheme must agree with the URL."""
    ports = {"https": parse_port("--https-port", options.get("https_port")) or 443,
             "http": parse_port("--http-port", options.get("http_port")) or 80}
    given = options.get(f"{scheme}_port")
    if url_port and given and int(given) != url_port:
        raise ValueError(f"--{scheme}-port: {given} differs from the URL's port {url_port}")
    if url_port:
        ports[scheme] = url_port
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


def parse_ip(text) -> str | None:
    if not text:
        return None
    try:
        return ipaddress.ip_address(text).compressed
    except ValueError:
        raise ValueError(f"--ip: {text!r} is not an IPv4 or IPv6 address") from None


def read_ca_file(name) -> str | None:
    if not name:
        return None
    path = Path(name)
    if not path.is_file():
        raise ValueError(f"--ca-file: {name} does not exist")
    try:
        text = path.read_bytes()[:1_000_000].decode("ascii", errors="replace")
    except OSError as exc:
        raise ValueError(f"--ca-file: {name} cannot be read ({exc.strerror})") from None
    if "-----BEGIN CERTIFICATE-----" not in text:
        raise ValueError(f"--ca-file: {name} is not a PEM certificate file")
    return text


def parse_runs(text) -> int:
    try:
        runs = int(str(text).strip())
    except ValueError:
        raise ValueError(f"--runs: {text!r} is not a whole number") from None
    if not 1 <= runs <= MAX_RUNS:
        raise ValueError(f"--runs must be between 1 and {MAX_RUNS}, got {runs}")
    return runs


def parse_timeout(text) -> float:
    try:
        timeout = float(str(text).strip())
    except ValueError:
        raise ValueError(f"--timeout: {text!r} is not a number of seconds") from None
    if not math.isfinite(timeout) or not 1 <= timeout <= MAX_TIMEOUT_S:
        raise ValueError(f"--timeout must be between 1 and {MAX_TIMEOUT_S} seconds, got {text}")
    return timeout


def parse_deadline(text) -> float:
    try:
        deadline = float(str(text).strip())
    except ValueError:
        raise ValueError(f"--deadline: {text!r} is not a number of seconds") from None
    if not math.isfinite(deadline) or not 1 <= deadline <= MAX_DEADLINE_S:
        raise ValueError(f"--deadline must be between 1 and {MAX_DEADLINE_S} seconds, got {text}")
    return deadline


def preflight(spec, scheme: str):
    """The app's pre-flight of the URL's scheme, on the checked address: a TargetError, or None. It
    resolves (through the SSRF guard) only to connect: the engine's guard pins the page itself."""
    from workers.net.errors import TargetError
    from workers.net.target import resolve_target
    from workers.tls.reach import engine_preflight

    port = spec.https_port if scheme == "https" else spec.http_port
    try:
        target = resolve_target(spec.host, port, pinned_ip=spec.ip, allow_private=settings.ALLOW_PRIVATE_TARGETS)
    except TargetError:
        return None  # the engine refuses it with the same words, before starting Chromium
    return engine_preflight(target.ip, port, target.host, settings.SCAN_NETWORK_TIMEOUT, tls=scheme == "https")


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
            "result": result}


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
                    f"{spec['runs']} loads per row (medians, ms), "
                    f"Chromium {result['browser']['version']}, {result['duration_s']:.1f} s")
    for mode, row in result["increase_pct"].items():
        if row:
            shown = ", ".join(f"{k} {fmt(v)}%" for k, v in row.items() if v is not None)
            lines.append(f"HTTPS over HTTP, {mode} (medians): {shown}")
    for mode, row in (result.get("increase") or {}).items():
        for metric in ("tls", "ttfb", "load"):
            if metric in row:
                lines.append(f"HTTPS vs HTTP, {mode} {metric} over the loads: "
                             f"{change_text(row[metric])}")
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
