"""python manage.py loadtest URL [--ip IP] [-n N] [-c C] [-k] [--timeout S] [-t SECONDS] [--deadline S]
                             [-H 'Name: value']... [--ca-file PEM | --insecure] [--processes P]
                             [-f 1.2|1.3] [-Z CIPHERS] [--repeats R] [--json]

`ab` for one URL, run now by workers.load.client without a worker or the database. Prints an
`ab` for one URL, run now by workers.load.client without a worker or the database. Prints an
ab-like report (ab's line labels, then µs lines ab cannot print, the end-to-end rate over the whole
run with its set-up, and the process's own start-up apart) or one JSON object. With --repeats R the
run is made R times after a warm-up: the report is the median run's, with the median rate and its
95 % interval. On a terminal (and without --json) it prints ab's "Completed N requests". Exit 0 when
the run happened (whatever the failures), 2 on bad arguments, when nothing could connect, when the
pre-flight handshake fails (as for a run from the app), when every request times out for
LOAD_STALL_SECONDS (`stalled`) or when the run is not done by its deadline (`deadline`; default
CLI_DEADLINE_SECONDS, or -t + 30 s); with --json: {"error": {"code", "message"}, ...} and, for the
last two, the partial "report". The target passes the SSRF guard like `audit`.
"""

from __future__ import annotations

import time
from dataclasses import replace
from urllib.parse import urlsplit

from tlsaudit.core.management.base import (
    TARGET_HELP,
    UNREACHABLE,
    TargetCommand,
    as_url,
    parse_ca_file,
    parse_int,
    parse_ip,
    pin_target,
    preflight,
)
from tlsaudit.core.standalone import setting
from tlsaudit.core.terminal import startup_line, startup_s
from tlsaudit.domain.abstats import ab_report, ab_text, cell_summary, run_figures
from tlsaudit.domain.hostnames import AddressError, parse_address
from tlsaudit.loadtests.plans import STEP_OVERHEAD_S
from workers.load.client import LoadError, run_load
from workers.load.spec import LoadSpec

MAX_REQUESTS = 1_000_000          # the CLI is a measuring tool, not a flood tool
MAX_CONCURRENCY = 1_000
MAX_TIMEOUT_S = 300
MAX_TIME_LIMIT_S = 3_600
MAX_PROCESSES = 16
MAX_REPEATS = 20
WARMUP_REQUESTS = 50
AB_TIME_LIMIT_REQUESTS = 50_000   # ab -t without -n runs at most this many requests
DEFAULT_REQUESTS = 100
DEADLINE_AFTER_TIME_LIMIT_S = 30  # with -t, the default deadline leaves this much for start-up and the end
RUN_SLACK_S = STEP_OVERHEAD_S     # a run's set-up and its requests in flight when -t runs out
STALL_MARGIN_S = 5.0              # the stall bound is at least one request timeout and this


class Command(TargetCommand):
    help = "Load-test one URL like ApacheBench (ab): n requests over c connections, new or kept-alive."
    engine_argument_errors = (LoadError,)

    def add_arguments(self, parser):
        parser.add_argument("url", nargs="?", default="", help=TARGET_HELP)
        add_target_arguments(self, parser)
        parser.add_argument("-n", dest="requests", default=None,
                            help=f"number of requests (default {DEFAULT_REQUESTS}; with -t: an upper bound, "
                                 f"default {AB_TIME_LIMIT_REQUESTS})")
        parser.add_argument("-c", dest="concurrency", default="1", help="concurrent connections (default 1)")
        parser.add_argument("-t", dest="time_limit", default=None, help="stop after this many seconds")
        parser.add_argument("-H", dest="headers", action="append", default=[],
                            help="extra header 'Name: value' (repeatable; replaces ours of the same name)")
        self.add_ca_file_argument(parser)
        self.add_insecure_argument(parser)
        parser.add_argument("-f", "--tls-version", dest="tls_version", default=None, help="force TLS 1.2 or 1.3")
        parser.add_argument("-Z", "--ciphers", dest="ciphers", default=None,
                            help="OpenSSL cipher string for TLS <= 1.2")
        parser.add_argument("--repeats", default="1",
                            help=f"run it this many times after a discarded warm-up and give the median rate with "
                                 f"its 95 %% interval (default 1: one run, like ab; at most {MAX_REPEATS})")

    def parse(self, options):
        spec = parse_loadtest(options)
        repeats = parse_int(options.get("repeats") or 1, "--repeats", 1, MAX_REPEATS)
        return spec, parse_deadline(options, planned_s(spec, repeats)), repeats

    def run(self, plan):
        spec, deadline_s, repeats = plan
        try:
            target = pin_target(spec.host, spec.port, spec.ip)
        except UNREACHABLE as exc:
            self.fail(exc.code, exc.message, host=spec.host, port=spec.port)
        spec = replace(spec, host=target.host, ip=target.ip)
        error = preflight(spec.host, spec.ip, spec.port, tls=spec.scheme == "https")
        if error is not None:
            self.fail(error.code, error.message, host=spec.host, port=spec.port)
        startup = startup_s()
        planned = planned_s(spec, repeats)
        if planned is not None:
            self.progress().note(f"Plan: {repeats} run{'s' if repeats > 1 else ''} of at most {spec.time_limit_s:g} s: "
                                 f"at most {planned:.0f} s")

        def cut_short(result: dict):
            return ended_early(result, spec.time_limit_s, deadline_s)

        reports, ended = run_repeats(run_load, spec, repeats, self.progress(), self.started + deadline_s, cut_short)
        report = typical(reports)
        if nothing_connected(report):
            self.fail("no_connection", no_connection_message(report), host=spec.host, port=spec.port,
                      ip=spec.ip, errors=report["errors"])
        if ended is not None:
            self.fail(*ended, host=spec.host, port=spec.port, ip=spec.ip, report=report)
        cell = cell_summary([run_figures(r) for r in reports])
        if self.as_json:
            self.finish({**cli_json(spec, report), "startup_s": startup, "planned_s": planned, "repeats": len(reports),
                         "summary": cell, "runs": [run_figures(r) for r in reports]})
        self.finish(ab_text(report) + repeats_text(cell, len(reports)) + startup_text(startup))


def run_repeats(run_load, spec, repeats: int, progress, deadline: float, cut_short) -> tuple[list[dict], tuple | None]:
    """One run like ab; with more repeats, a discarded warm-up first, then the runs back to back, each within
    what is left of `deadline` (a time.monotonic() instant). Returns the measured runs' reports and, when
    `cut_short(result)` says the stall bound or the deadline ended a run, its (code, message): no run follows."""
    queue = ([replace(spec, requests=max(spec.concurrency, min(spec.requests, WARMUP_REQUESTS)))] if repeats > 1
             else []) + [spec] * repeats
    total, done, reports, ended = sum(s.requests for s in queue), 0, [], None
    for index, run_spec in enumerate(queue):
        offset = done
        result = run_load(within(run_spec, deadline), on_progress=lambda d, _t: progress(offset + d, total)).to_dict()
        done += run_spec.requests
        progress(done, total)
        if repeats == 1 or index > 0:
            reports.append(ab_report(result))
        ended = cut_short(result)
        if ended is not None:
            reports = reports or [ab_report(result)]   # the warm-up was cut: its partial report is all there is
            break
    progress.finish(sum(r["complete_requests"] for r in reports))
    return reports, ended


def typical(reports: list[dict]) -> dict:
    """The run whose end-to-end rate is the median one: the report ab's layout shows."""
    ordered = sorted(reports, key=lambda r: r["requests_per_second_end_to_end"] or 0)
    return ordered[(len(ordered) - 1) // 2]


def repeats_text(cell: dict, repeats: int) -> str:
    rate = cell["requests_per_second"]
    lines = []
    if repeats > 1:
        figure = f"{rate['median']:.2f} [#/sec], 95 % interval {rate['low']:.2f} … {rate['high']:.2f}" \
            if rate["low"] is not None else f"{rate['median']:.2f} [#/sec]"
        lines.append(f"{f'Over {repeats} repeats:':<24}{figure} (end to end; the report above is the median run)")
    if cell["too_short"]:
        lines.append(f"Nothing measured:       {cell['too_short']}")
    return "".join(f"{line}\n" for line in lines)


def startup_text(startup) -> str:
    return f"{startup_line(startup)}\n" if startup is not None else ""


# ---------------------------------------------------------------------------------------------
# Shared with `overhead`


def add_target_arguments(command, parser) -> None:
    command.add_ip_argument(parser, help="connect to this IP instead of resolving the host")
    parser.add_argument("--deadline", default=None,
                        help=f"end with an error if the run is not done after this many seconds (default "
                             f"{setting('CLI_DEADLINE_SECONDS')}; with -t, -t + {DEADLINE_AFTER_TIME_LIMIT_S})")
    parser.add_argument("-k", dest="keepalive", action="store_true",
                        help="keep-alive: reuse HTTP/1.1 connections (default: a new connection per request)")
    parser.add_argument("--timeout", default="30", help="seconds per request, connect included (default 30)")
    parser.add_argument("--processes", default="auto",
                        help=f"OS processes to spread the load over (1-{MAX_PROCESSES}; default auto: one per "
                             f"core this process may use, at most one per 8 connections)")
    command.add_json_argument(parser)


def parse_seconds(text, option: str, high: float) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ValueError(f"{option}: {text!r} is not a number of seconds") from None
    if not 0 < value <= high:  # also refuses NaN and inf
        raise ValueError(f"{option} must be more than 0 and at most {high:g} seconds, got {text}")
    return value


def parse_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip() or any(c.isspace() for c in name.strip()):
        raise ValueError(f"-H: {text!r} is not a header of the form 'Name: value'")
    if any(c in text for c in "\r\n\0"):
        raise ValueError(f"-H: {text!r} contains a line break or NUL")
    return name.strip(), value.strip()


def parse_url(url: str) -> tuple[str, str, int, str]:
    """(scheme, ASCII host, port, path with query) of an http(s) URL, HOST or HOST:PORT (HTTPS);
    ValueError says what is wrong."""
    text = as_url(url)
    if not text:
        raise ValueError("url: give the URL to load, e.g. https://example.com/")
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"url: {text!r} must start with http:// or https://")
    if parts.username or parts.password:
        raise ValueError("url: remove the user name and password from the URL")
    try:
        address = parse_address(f"{parts.scheme.lower()}://{parts.netloc}/")
    except AddressError as exc:
        raise ValueError(f"url: {exc}") from None
    scheme = parts.scheme.lower()
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if any(c.isspace() for c in path):
        raise ValueError("url: the path cannot contain spaces (percent-encode them)")
    return scheme, address.hostname, address.port or (443 if scheme == "https" else 80), path


def parse_common(options) -> dict:
    return {"ip": parse_ip(options.get("ip"), strip=True), "keepalive": bool(options.get("keepalive")),
            "timeout_s": parse_seconds(options["timeout"], "--timeout", MAX_TIMEOUT_S),
            "processes": parse_processes(options["processes"])}


def parse_processes(text) -> int:
    """--processes: a number, or "auto" (0: the engine chooses per run, see client.automatic_processes)."""
    if str(text).strip().lower() == "auto":
        return 0
    return parse_int(text, "--processes", 1, MAX_PROCESSES)


def parse_loadtest(options):
    scheme, host, port, path = parse_url(options["url"])
    time_limit = parse_seconds(options["time_limit"], "-t", MAX_TIME_LIMIT_S) if options["time_limit"] else None
    default_n = AB_TIME_LIMIT_REQUESTS if time_limit else DEFAULT_REQUESTS
    requests = parse_int(options["requests"] or default_n, "-n", 1, MAX_REQUESTS)
    concurrency = parse_int(options["concurrency"], "-c", 1, MAX_CONCURRENCY)
    if concurrency > requests:
        raise ValueError(f"-c {concurrency} is more than -n {requests}: cannot have more connections than requests")
    tls_version = options.get("tls_version")
    if tls_version not in (None, "1.2", "1.3"):
        raise ValueError(f"-f: {tls_version!r} is not a TLS version this tool forces (use 1.2 or 1.3)")
    if (tls_version or options.get("ciphers")) and scheme != "https":
        raise ValueError("-f / -Z apply to https:// URLs only")
    if options.get("ciphers") and tls_version == "1.3":
        raise ValueError("-Z sets TLS <= 1.2 cipher suites; TLS 1.3 suites cannot be chosen here")
    ca_file = parse_ca_file(options.get("ca_file"), options.get("insecure"))
    if ca_file and scheme != "https":
        raise ValueError("--ca-file applies to https:// URLs only")
    return LoadSpec(scheme=scheme, host=host, port=port, path=path, requests=requests, concurrency=concurrency,
                    time_limit_s=time_limit, headers=tuple(parse_header(h) for h in options["headers"]),
                    ca_file=ca_file, insecure=ca_file is None, tls_version=tls_version,
                    ciphers=options.get("ciphers") or None, **parse_common(options))


def planned_s(spec, repeats: int) -> float | None:
    """With -t, the longest the runs can take (each to its limit, plus its set-up and requests in flight)."""
    return (spec.time_limit_s + RUN_SLACK_S) * repeats if spec.time_limit_s else None


def parse_deadline(options, time_limit_s: float | None = None) -> float:
    """--deadline in seconds; by default CLI_DEADLINE_SECONDS, or long enough for -t to run out first."""
    if options.get("deadline"):
        return parse_seconds(options["deadline"], "--deadline", MAX_TIME_LIMIT_S + DEADLINE_AFTER_TIME_LIMIT_S)
    if time_limit_s:
        return time_limit_s + DEADLINE_AFTER_TIME_LIMIT_S
    return float(setting("CLI_DEADLINE_SECONDS"))


def stall_after(timeout_s: float) -> float:
    return max(float(setting("LOAD_STALL_SECONDS")), timeout_s + STALL_MARGIN_S)


def within(spec, deadline: float):
    """`spec` bounded by the deadline (a time.monotonic() instant) and by the stall bound."""
    left = max(0.001, deadline - time.monotonic())
    limit = min(spec.time_limit_s, left) if spec.time_limit_s else left
    return replace(spec, time_limit_s=limit, stall_s=stall_after(spec.timeout_s))


def ended_early(result: dict, asked_limit: float | None, deadline_s: float) -> tuple[str, str] | None:
    """(code, message) when the run was ended by the stall bound or the deadline, not by n or -t."""
    spec, counters = result["spec"], result["counters"]
    where = f"{spec['scheme']}://{spec['host']}:{spec['port']}{spec['path']}"
    if result.get("stalled"):
        return "stalled", (f"Every request to {where} timed out for {spec['stall_s']:g} s ({counters['timeouts']} "
                           "timeouts, no answer), so the run was stopped: the server stalls, or sends its responses "
                           "a few bytes at a time.")
    if counters["complete"] == 0 and counters["timeouts"] and counters["timeouts"] == counters["failed"]:
        # a short run (the warm-up) can time out every request before the stall bound ends it
        return "stalled", (f"Every request to {where} timed out ({counters['timeouts']} timeouts of "
                           f"{spec['timeout_s']:g} s, no answer), so the run was stopped: the server stalls, or "
                           "sends its responses a few bytes at a time.")
    done = counters["complete"] + counters["failed"] - counters["failed_length"]
    if done < spec["requests"] and not result.get("cancelled") and spec["time_limit_s"] != asked_limit:
        return "deadline", deadline_message(where, deadline_s, f"{done} of {spec['requests']} requests")
    return None


def deadline_message(where: str, deadline_s: float, done: str) -> str:
    return (f"The run against {where} was not done by its {deadline_s:g} s deadline ({done}): the server answers "
            "too slowly, or stalls some connections. Give --deadline more seconds for a longer run.")


def nothing_connected(report: dict) -> bool:
    return report["complete_requests"] == 0 and report["failed_requests"] == report["failed_breakdown"]["connect"]


def no_connection_message(report: dict) -> str:
    reasons = "; ".join(f"{reason} ({n})" for reason, n in sorted(report["errors"].items(), key=lambda kv: -kv[1]))
    return (f"No request could connect to {report['server_hostname']}:{report['server_port']}: "
            f"{reasons or 'no attempt was made'}.")


def phase_ms(stats: dict | None) -> dict | None:
    if not stats:
        return None
    return {k: stats[k] / 1000 for k in ("min", "mean", "median", "max")} | {"sd": stats["sd"] / 1000}


def cli_json(spec, report: dict) -> dict:
    """The issue's JSON fields first, then the whole ab-style report."""
    phases = report["connection_times"]["phases"]
    return {
        "url": f"{spec.scheme}://{spec.host}:{spec.port}{spec.path}", "ip": spec.ip,
        "requests_per_second": report["requests_per_second"], "time_taken_s": report["time_taken_s"],
        "complete": report["complete_requests"], "failed": report["failed_requests"],
        "non_2xx": report["non_2xx_responses"], "latency_ms": report["latency_ms"],
        "connect_ms": phase_ms(phases["connect"]),
        "tls_handshake_ms": phase_ms(report["tls_handshake"]) if spec.scheme == "https" else None,
        "protocol": report["protocol"] or None, "cipher": report["cipher"] or None,
        "report": report,
    }

