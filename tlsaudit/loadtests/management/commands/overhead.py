"""python manage.py overhead HOST [--ip IP] [--http-port P] [--https-port P] [--path /]
                             [--levels 1,20,40] [-n N] [-k] [--timeout S] [--processes P] [--deadline S] [--json]

What TLS costs a site, the seeds' way: at each concurrency level run n requests over HTTP, then
over HTTPS (interleaved HTTP L1, HTTPS L1, HTTP L2, ... so machine drift hits both sides), and
report overhead % = |HTTPS - HTTP| / HTTP x 100 for time taken and requests per second, per level
and averaged (tlsaudit.domain.abstats.overhead / sweep_summary). No worker, no database.
Exit 0 when the sweep ran, 2 on bad arguments, when a side could not connect at all or failed its
pre-flight, or when a run stalled or the sweep was not done by its deadline (as `loadtest`).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace

from django.core.management.base import BaseCommand

from tlsaudit.domain.abstats import ab_report, sweep_summary
from tlsaudit.domain.hostnames import AddressError, parse_address, parse_port
from tlsaudit.loadtests.management.commands.loadtest import (
    EXIT_OK, MAX_CONCURRENCY, MAX_REQUESTS, add_target_arguments, deadline_message, ended_early, fail,
    no_connection_message, nothing_connected, parse_common, parse_deadline, parse_int, pin_target, preflight, within)

DEFAULT_LEVELS = "1,20,40,60,80,100"
DEFAULT_REQUESTS = 500
MAX_LEVELS = 20
MAX_SWEEP_REQUESTS = 2_000_000   # all runs together


class Command(BaseCommand):
    help = "HTTP vs HTTPS load at several concurrency levels, and the overhead TLS adds (in %)."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("host", nargs="?", default="", help="HOST (no scheme, no port: see --http-port)")
        add_target_arguments(parser)
        parser.add_argument("--http-port", default="80", help="plain HTTP port (default 80)")
        parser.add_argument("--https-port", default="443", help="HTTPS port (default 443)")
        parser.add_argument("--path", default="/", help="path to request on both sides (default /)")
        parser.add_argument("--levels", default=DEFAULT_LEVELS, help=f"concurrency levels (default {DEFAULT_LEVELS})")
        parser.add_argument("-n", dest="requests", default=str(DEFAULT_REQUESTS),
                            help=f"requests per level and side (default {DEFAULT_REQUESTS})")

    def handle(self, *args, **options):
        self.as_json = options["json"]
        started = time.monotonic()
        try:
            plan = parse_overhead(options)
            deadline_s = parse_deadline(options)
        except ValueError as exc:
            return fail(self, "invalid_argument", str(exc))
        https_spec, error = pin_target(plan["specs"][0][1])
        if error is None:
            error = preflight(https_spec) or preflight(replace(https_spec, scheme="http", port=plan["http_port"]))
        if error is not None:
            return fail(self, error.code, error.message, host=plan["host"])
        from workers.load.client import LoadError, run_load  # the engine loads only for this command

        try:
            levels = run_sweep(run_load, plan, https_spec.ip, (started + deadline_s, deadline_s))
        except LoadError as exc:
            return fail(self, "invalid_argument", str(exc))
        except SweepEnded as ended:
            return fail(self, ended.code, ended.message, host=plan["host"], ip=https_spec.ip)
        for level in levels:
            for side in ("http", "https"):
                if nothing_connected(level[side]):
                    return fail(self, "no_connection", f"{side.upper()} at concurrency {level['concurrency']}: "
                                + no_connection_message(level[side]), host=plan["host"], ip=https_spec.ip)
        summary = sweep_summary(levels)
        output = sweep_json(plan, https_spec.ip, levels, summary) if self.as_json else render(plan, https_spec.ip,
                                                                                               summary)
        self.stdout.write(json.dumps(output, indent=2) if self.as_json else output)
        sys.exit(EXIT_OK)


def parse_overhead(options) -> dict:
    from dataclasses import replace

    from workers.load.spec import LoadSpec

    host = parse_host(options["host"])
    http_port = parse_port_option(options["http_port"], "--http-port")
    https_port = parse_port_option(options["https_port"], "--https-port")
    path = options["path"] or "/"
    if not path.startswith("/") or any(c.isspace() for c in path):
        raise ValueError(f"--path: {path!r} must start with / and contain no spaces")
    levels = parse_levels(options["levels"])
    requests = parse_int(options["requests"], "-n", 1, MAX_REQUESTS)
    if requests < max(levels):
        raise ValueError(f"-n {requests} is less than the highest level {max(levels)}: "
                         f"every level needs at least as many requests as connections")
    if requests * len(levels) * 2 > MAX_SWEEP_REQUESTS:
        raise ValueError(f"this sweep would send {requests * len(levels) * 2:,} requests; "
                         f"the limit is {MAX_SWEEP_REQUESTS:,} (lower -n or --levels)")
    common = parse_common(options)
    base = LoadSpec(scheme="https", host=host, port=https_port, path=path, requests=requests, **common)
    specs = [(c, replace(base, concurrency=c)) for c in levels]
    return {"host": host, "http_port": http_port, "https_port": https_port, "path": path, "levels": levels,
            "requests": requests, "keepalive": common["keepalive"], "specs": specs}


def parse_host(text: str) -> str:
    if not (text or "").strip():
        raise ValueError("host: give the site's host name, e.g. example.com")
    if "://" in text:
        raise ValueError(f"host: {text!r} must be a bare host name; give ports with --http-port / --https-port")
    try:
        address = parse_address(text)
    except AddressError as exc:
        raise ValueError(f"host: {exc}") from None
    if address.port is not None:
        raise ValueError("host: give ports with --http-port / --https-port, not HOST:PORT")
    return address.hostname


def parse_port_option(text, option: str) -> int:
    try:
        return parse_port(str(text).strip())
    except (AddressError, ValueError) as exc:
        raise ValueError(f"{option}: {exc}") from None


def parse_levels(text: str) -> list[int]:
    items = [item.strip() for item in str(text or "").split(",") if item.strip()]
    if not items:
        raise ValueError("--levels: give at least one concurrency level, e.g. 1,20,40")
    levels = [parse_int(item, "--levels", 1, MAX_CONCURRENCY) for item in items]
    if len(levels) > MAX_LEVELS:
        raise ValueError(f"--levels: at most {MAX_LEVELS} levels, got {len(levels)}")
    if len(set(levels)) != len(levels):
        raise ValueError(f"--levels: {text!r} repeats a level")
    return levels


class SweepEnded(Exception):
    """A run of the sweep stalled, or the sweep reached its deadline: (code, message)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def run_sweep(run_load, plan: dict, ip: str, deadline: tuple[float, float] | None = None) -> list[dict]:
    """HTTP L1, HTTPS L1, HTTP L2, HTTPS L2, ...: interleaved so that drift hits both sides alike.
    `deadline`: (time.monotonic() instant, its length in s); each run gets what is left of it and the
    stall bound, and the first run they end stops the sweep (SweepEnded)."""
    levels = []
    for concurrency, https_spec in plan["specs"]:
        https_spec = replace(https_spec, ip=ip)
        http_spec = replace(https_spec, scheme="http", port=plan["http_port"])
        http, https = (ab_report(run_bounded(run_load, spec, deadline)) for spec in (http_spec, https_spec))
        levels.append({"concurrency": concurrency, "http": http, "https": https})
    return levels


def run_bounded(run_load, spec, deadline: tuple[float, float] | None) -> dict:
    if deadline is None:
        return run_load(spec).to_dict()
    if time.monotonic() >= deadline[0]:  # the runs before this one took the whole deadline
        where = f"{spec.scheme}://{spec.host}:{spec.port}{spec.path}"
        raise SweepEnded("deadline", deadline_message(where, deadline[1], "this run did not start"))
    result = run_load(within(spec, deadline[0])).to_dict()
    ended = ended_early(result, None, deadline[1])
    if ended is not None:
        raise SweepEnded(*ended)
    return result


def side_json(report: dict) -> dict:
    return {"time_taken_s": report["time_taken_s"], "requests_per_second": report["requests_per_second"],
            "complete": report["complete_requests"], "failed": report["failed_requests"],
            "non_2xx": report["non_2xx_responses"], "latency_ms": report["latency_ms"],
            "protocol": report["protocol"] or None, "cipher": report["cipher"] or None}


def sweep_json(plan: dict, ip: str, levels: list[dict], summary: dict) -> dict:
    rows = [{**row, "http": side_json(level["http"]), "https": side_json(level["https"])}
            for row, level in zip(summary["levels"], levels)]
    return {"host": plan["host"], "ip": ip, "http_port": plan["http_port"], "https_port": plan["https_port"],
            "path": plan["path"], "requests": plan["requests"], "keepalive": plan["keepalive"],
            "levels": rows, "average": summary["average"]}


def fmt(value, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render(plan: dict, ip: str, summary: dict) -> str:
    mode = "keep-alive" if plan["keepalive"] else "new connection per request"
    lines = [f"TLS overhead for {plan['host']} ({ip}): HTTP :{plan['http_port']} vs HTTPS :{plan['https_port']}, "
             f"{plan['path']}, {plan['requests']} requests per run, {mode}", "",
             "Time taken (s)                                     Requests per second",
             f"{'c':>5} {'HTTP':>9} {'HTTPS':>9} {'overhead %':>11}      {'HTTP':>10} {'HTTPS':>10} {'overhead %':>11}"]
    rows = summary["levels"] + [{"concurrency": "avg", **summary["average"]}]
    for row in rows:
        lines.append(f"{row['concurrency']:>5} {fmt(row['http_time_taken_s'], 3):>9} "
                     f"{fmt(row['https_time_taken_s'], 3):>9} {fmt(row['time_taken_overhead_pct'], 1):>11}      "
                     f"{fmt(row['http_requests_per_second'], 1):>10} {fmt(row['https_requests_per_second'], 1):>10} "
                     f"{fmt(row['requests_per_second_overhead_pct'], 1):>11}")
    return "\n".join(lines) + "\n"
