"""python manage.py overhead HOST[:PORT] | URL [--ip IP] [--http-port P] [--https-port P] [--path /]
                             [--levels 1,20,50,100] [-t S] [-n N] [--repeats R] [-k] [--timeout S]
                             [--processes P] [--deadline S] [--json]

What TLS costs a site, the seeds' way, measured soundly: after a discarded warm-up per side, R rounds
(default 3); in each, at every concurrency level, a run over HTTP and a run over HTTPS back to back,
each for -t seconds (default 2, like ab -t; -n caps its requests, as ab's -n with -t), the pair's
order alternating by round (so drift hits both sides and neither always goes first). The plan's
longest time is printed before it starts (`planned_s` in --json).
Per level: the overhead signed, with its 95 % interval: the median of every request's time
(HTTPS - HTTP) / HTTP, beside the two medians (tlsaudit.domain.compare: drift between the repeats
widens the interval), and the end-to-end requests/s (HTTP - HTTPS) / HTTP over the repeats; both
positive when HTTPS is slower; "no significant difference" when the interval spans 0, with the
interval, so the answer is how large a difference could be. Rates are end to end (set-up included);
the process's own start-up is reported apart. No worker, no database.
Exit 0 when the sweep ran, 2 on bad arguments, when a side could not connect at all or failed its
pre-flight, or when a run stalled or the sweep was not done by its deadline (as `loadtest`).
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
    parse_int,
    pin_target,
    preflight,
    side_ports,
)
from tlsaudit.core.terminal import Progress, startup_line, startup_s
from tlsaudit.domain import stats
from tlsaudit.domain.abstats import ab_report, run_figures, sweep_summary, without_pairs
from tlsaudit.domain.hostnames import AddressError, parse_port
from tlsaudit.loadtests.management.commands.loadtest import (
    AB_TIME_LIMIT_REQUESTS,
    MAX_CONCURRENCY,
    MAX_REQUESTS,
    MAX_TIME_LIMIT_S,
    RUN_SLACK_S,
    add_target_arguments,
    deadline_message,
    ended_early,
    no_connection_message,
    nothing_connected,
    parse_common,
    parse_deadline,
    parse_seconds,
    parse_url,
    within,
)
from tlsaudit.loadtests.plans import WARMUP_CONCURRENCY, WARMUP_REQUESTS, in_order
from workers.load.client import LoadError, run_load
from workers.load.spec import LoadSpec

DEFAULT_LEVELS = "1,20,50,100"      # the dashboard's sweep: the single visitor first
DEFAULT_SECONDS = 2.0
UNTIMED_REQUESTS = 500              # -n when -t 0 (no time limit) and no -n
DEFAULT_REPEATS = 3
MAX_REPEATS = 20
MAX_LEVELS = 20
MAX_SWEEP_REQUESTS = 2_000_000   # all runs together
SCHEMES = ("http", "https")


class Command(TargetCommand):
    help = "HTTP vs HTTPS load at several concurrency levels, and the overhead TLS adds (signed %, 95 % intervals)."
    engine_argument_errors = (LoadError,)

    def add_arguments(self, parser):
        parser.add_argument("host", nargs="?", default="", help=f"{TARGET_HELP}: its port is that side's, the "
                                                                "other side's comes from --http-port / --https-port")
        add_target_arguments(self, parser)
        parser.add_argument("--http-port", default=None, help="plain HTTP port (default 80)")
        parser.add_argument("--https-port", default=None, help="HTTPS port (default 443)")
        parser.add_argument("--path", default=None, help="path to request on both sides (default: the URL's, or /)")
        parser.add_argument("--levels", default=DEFAULT_LEVELS, help=f"concurrency levels (default {DEFAULT_LEVELS})")
        parser.add_argument("-t", dest="time_limit", default=f"{DEFAULT_SECONDS:g}",
                            help="seconds per run (level, side and repeat), like ab -t (default %(default)s; 0 = no "
                                 f"limit: -n requests, default {UNTIMED_REQUESTS})")
        parser.add_argument("-n", dest="requests", default=None,
                            help=f"at most this many requests per run (default {AB_TIME_LIMIT_REQUESTS:,} with -t, "
                                 "as ab -t)")
        parser.add_argument("--repeats", default=str(DEFAULT_REPEATS),
                            help=f"rounds of every level and side (default {DEFAULT_REPEATS}; 1 = no interval)")

    def parse(self, options):
        plan = parse_overhead(options)
        return plan, parse_deadline(options, longest_sweep_s(plan))

    def run(self, plan):
        plan, deadline_s = plan
        ip = self.reach_both_sides(plan)
        longest = longest_sweep_s(plan)
        if longest is not None:
            self.progress().note(f"Plan: {len(plan['levels'])} levels x 2 sides x {plan['repeats']} repeats of at most "
                                 f"{plan['time_limit']:g} s each, after a warm-up per side: at most {longest:.0f} s")
        startup = startup_s()
        try:
            runs = run_sweep(run_load, plan, ip, self.progress(), (self.started + deadline_s, deadline_s))
        except SweepEnded as ended:
            self.fail(ended.code, ended.message, host=plan["host"], ip=ip)
        for run in runs:
            if nothing_connected(run["report"]):
                self.fail("no_connection", f"{run['scheme'].upper()} at concurrency {run['concurrency']}: "
                          + no_connection_message(run["report"]), host=plan["host"], ip=ip)
        summary = summary_of_runs(runs)
        part = summary.get("keepalive" if plan["keepalive"] else "new") or {"levels": [], "average": {}}
        self.finish(sweep_json(plan, ip, runs, part, startup) if self.as_json else render(plan, ip, part, startup))

    def reach_both_sides(self, plan: dict) -> str:
        """The address the SSRF guard checked, once HTTPS and then HTTP passed their pre-flights."""
        try:
            target = pin_target(plan["host"], plan["https_port"], plan["specs"][0][1].ip)
        except UNREACHABLE as exc:
            self.fail(exc.code, exc.message, host=plan["host"])
        error = (preflight(target.host, target.ip, target.port)
                 or preflight(target.host, target.ip, plan["http_port"], tls=False))
        if error is not None:
            self.fail(error.code, error.message, host=plan["host"])
        return target.ip


def parse_overhead(options) -> dict:
    host, ports, path = parse_sides(options)
    http_port, https_port = ports["http"], ports["https"]
    if not path.startswith("/") or any(c.isspace() for c in path):
        raise ValueError(f"--path: {path!r} must start with / and contain no spaces")
    levels = parse_levels(options["levels"])
    repeats = parse_int(options.get("repeats") or DEFAULT_REPEATS, "--repeats", 1, MAX_REPEATS)
    time_limit = (parse_seconds(options["time_limit"], "-t", MAX_TIME_LIMIT_S)
                  if str(options.get("time_limit")).strip() not in ("None", "", "0") else None)
    given = options.get("requests") not in (None, "")
    requests = (parse_int(options["requests"], "-n", 1, MAX_REQUESTS) if given else
                AB_TIME_LIMIT_REQUESTS if time_limit else UNTIMED_REQUESTS)
    if requests < max(levels):
        raise ValueError(f"-n {requests} is less than the highest level {max(levels)}: "
                         f"every level needs at least as many requests as connections")
    if given and requests * len(levels) * 2 * repeats > MAX_SWEEP_REQUESTS:
        raise ValueError(f"this sweep would send {requests * len(levels) * 2 * repeats:,} requests; "
                         f"the limit is {MAX_SWEEP_REQUESTS:,} (lower -n, --levels or --repeats)")
    common = parse_common(options)
    base = LoadSpec(scheme="https", host=host, port=https_port, path=path, requests=requests,
                    time_limit_s=time_limit, **common)
    specs = [(c, replace(base, concurrency=c)) for c in levels]
    return {"host": host, "http_port": http_port, "https_port": https_port, "path": path, "levels": levels,
            "requests": requests, "keepalive": common["keepalive"], "specs": specs, "repeats": repeats,
            "time_limit": time_limit}


def longest_sweep_s(plan: dict) -> float | None:
    """With -t, the longest the sweep can take: every run (two warm-ups, then each level, side and
    repeat) to its time limit, plus its set-up and the requests in flight at the limit (RUN_SLACK_S).
    The default deadline waits that long: at internet latency every run takes its whole -t. None
    without -t."""
    if not plan["time_limit"]:
        return None
    return (plan["time_limit"] + RUN_SLACK_S) * (2 + len(plan["levels"]) * 2 * plan["repeats"])


def parse_sides(options) -> tuple[str, dict, str]:
    """(host, {"http": port, "https": port}, path) from the target (HOST, HOST:PORT or a URL) and the
    options: the ports by `side_ports`; --path must agree with the URL's path."""
    text = as_url(options["host"])
    if not text:
        raise ValueError("host: give the site, e.g. example.com, example.com:8443 or https://example.com/")
    scheme, host, _default_port, url_path = parse_url(text)
    typed_port = urlsplit(text).port   # parse_url checked it
    ports = side_ports(scheme, typed_port, {
        side: parse_port_option(options.get(f"{side}_port"), f"--{side}-port")
        if options.get(f"{side}_port") not in (None, "") else None for side in ("http", "https")})
    path = options.get("path") or url_path
    if options.get("path") and url_path != "/" and options["path"] != url_path:
        raise ValueError(f"--path: {options['path']!r} differs from the URL's path {url_path!r}")
    if not path.startswith("/") or any(c.isspace() for c in path):
        raise ValueError(f"--path: {path!r} must start with / and contain no spaces")
    return host, ports, path


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


def run_sweep(run_load, plan: dict, ip: str, progress: Progress | None = None,
              deadline: tuple[float, float] | None = None) -> list[dict]:
    """1. A warm-up run per side (discarded). 2. Round after round: at every level, HTTP and HTTPS back
    to back, HTTP first in even rounds and HTTPS first in odd ones. Returns every measured run as
    {"concurrency", "scheme", "repeat", "report"}. `deadline`: (time.monotonic() instant, its length in s);
    each run gets what is left of it and the stall bound, and the first run they end stops the sweep
    (SweepEnded)."""
    mode = "keepalive" if plan["keepalive"] else "new"
    specs = {c: replace(spec, ip=ip) for c, spec in plan["specs"]}
    warm_c = min(max(specs), WARMUP_CONCURRENCY)
    warm = replace(specs[max(specs)], concurrency=warm_c, requests=max(warm_c, min(plan["requests"], WARMUP_REQUESTS)))
    queue = [(scheme, warm, None) for scheme in SCHEMES]
    queue += [(scheme, specs[c], r) for r in range(plan["repeats"]) for c in specs for scheme in in_order(SCHEMES, r)]
    total, done, runs = sum(spec.requests for _, spec, _ in queue), 0, []
    for scheme, spec, repeat in queue:
        side = spec if scheme == "https" else replace(spec, scheme="http", port=plan["http_port"])
        if progress is not None:
            which = "Warm-up" if repeat is None else f"Repeat {repeat + 1}/{plan['repeats']}"
            progress.note(f"{which}: {scheme.upper()} c={spec.concurrency} n={spec.requests} ({mode})")
        offset = done
        report = ab_report(run_bounded(run_load, side, deadline,
                                       (lambda d, _t: progress(offset + d, total)) if progress else None))
        done += side.requests
        if progress is not None:
            progress(done, total)
        if repeat is not None:
            runs.append({"concurrency": spec.concurrency, "scheme": scheme, "repeat": repeat, "report": report})
    if progress is not None:
        progress.finish(done)
    return runs


def summary_of_runs(runs: list[dict], mode: str | None = None) -> dict:
    figures = [{"mode": mode or ("keepalive" if r["report"]["keepalive"] else "new"), "level": r["concurrency"],
                "scheme": r["scheme"], "repeat": r["repeat"], **run_figures(r["report"])} for r in runs]
    return without_pairs(sweep_summary(figures))


def run_bounded(run_load, spec, deadline: tuple[float, float] | None, on_progress=None) -> dict:
    if deadline is None:
        return run_load(spec, on_progress=on_progress).to_dict()
    if time.monotonic() >= deadline[0]:  # the runs before this one took the whole deadline
        where = f"{spec.scheme}://{spec.host}:{spec.port}{spec.path}"
        raise SweepEnded("deadline", deadline_message(where, deadline[1], "this run did not start"))
    result = run_load(within(spec, deadline[0]), on_progress=on_progress).to_dict()
    ended = ended_early(result, spec.time_limit_s, deadline[1])   # a run stopped by its own -t is not cut
    if ended is not None:
        raise SweepEnded(*ended)
    return result


def side_json(report: dict) -> dict:
    return {"wall_s": report["wall_s"], "time_taken_s": report["time_taken_s"],
            "requests_per_second_end_to_end": report["requests_per_second_end_to_end"],
            "requests_per_second": report["requests_per_second"],
            "complete": report["complete_requests"], "failed": report["failed_requests"],
            "non_2xx": report["non_2xx_responses"], "latency_ms": report["latency_ms"],
            "protocol": report["protocol"] or None, "cipher": report["cipher"] or None}


def sweep_json(plan: dict, ip: str, runs: list[dict], part: dict, startup: float | None) -> dict:
    return {"host": plan["host"], "ip": ip, "http_port": plan["http_port"], "https_port": plan["https_port"],
            "path": plan["path"], "requests": plan["requests"], "keepalive": plan["keepalive"],
            "repeats": plan["repeats"], "time_limit_s": plan["time_limit"], "planned_s": longest_sweep_s(plan),
            "startup_s": startup,
            "levels": part["levels"], "average": part["average"],
            "runs": [{"concurrency": r["concurrency"], "scheme": r["scheme"], "repeat": r["repeat"],
                      **side_json(r["report"])} for r in runs]}


def fmt_us(value) -> str:
    """A median kept in µs, shown in ms."""
    return "-" if value is None else f"{value / 1000:.3f}"


def fmt(value, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def median_text(cell: dict, key: str, digits: int) -> str:
    """"12.345 [11.9, 12.8]" (median and 95 % interval over the repeats)."""
    estimate = cell[key]
    if estimate["low"] is None:
        return fmt(estimate["median"], digits)
    return f"{fmt(estimate['median'], digits)} [{fmt(estimate['low'], digits)}, {fmt(estimate['high'], digits)}]"


def render(plan: dict, ip: str, part: dict, startup: float | None) -> str:
    mode = "keep-alive" if plan["keepalive"] else "new connection per request"
    repeats = plan["repeats"]
    size = (f"{plan['time_limit']:g} s per run (at most {plan['requests']:,} requests)" if plan["time_limit"]
            else f"{plan['requests']:,} requests per run")
    lines = [f"TLS overhead for {plan['host']} ({ip}): HTTP :{plan['http_port']} vs HTTPS :{plan['https_port']}, "
             f"{plan['path']}, {size}, {mode}",
             f"{repeats} repeat{'s' if repeats > 1 else ''} per level after a discarded warm-up, HTTP and HTTPS back "
             "to back (order alternating); [95 % interval]. Time: the median of every request, HTTPS vs HTTP; "
             "req/s: end to end, median of the repeats. Overhead positive = HTTPS slower", ""]
    header = ("c", "HTTP median ms", "HTTPS median ms", "time overhead", "HTTP req/s", "HTTPS req/s",
              "req/s overhead")
    rows = [header]
    for row in part["levels"]:
        time = row["time_taken_overhead"]
        rows.append((str(row["concurrency"]), fmt_us(time.get("base_median")), fmt_us(time.get("other_median")),
                     stats.change_text(time),
                     median_text(row["http"], "requests_per_second", 1),
                     median_text(row["https"], "requests_per_second", 1),
                     stats.change_text(row["requests_per_second_overhead"])))
    average = part.get("average")
    if part["levels"] and average:
        rows.append(("avg", "", "", stats.change_text(average["time_taken_overhead"]), "", "",
                     stats.change_text(average["requests_per_second_overhead"])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines += ["  ".join(value.rjust(width) if i in (0,) else value.ljust(width) for i, (value, width)
                        in enumerate(zip(r, widths))).rstrip() for r in rows]
    short = [(row["concurrency"], scheme, row[scheme]) for row in part["levels"] for scheme in SCHEMES
             if row[scheme].get("too_short")]
    if short:
        lines += ["", "Nothing to compare (no request completed; see the errors above):"]
        lines += [f"  c={c} {scheme.upper()}: {cell['too_short']}" for c, scheme, cell in short]
    if startup is not None:
        lines += ["", startup_line(startup)]
    return "\n".join(lines) + "\n"
