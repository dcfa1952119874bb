"""python manage.py handshakes HOST[:PORT] [--ip IP] [--versions 1.2,1.3] [--suites S,...]
                             [--agents 10[,25,50]] [--per-agent 20] [--seconds 2] [--repeats 3] [--resume]
                             [--ca-file PEM | --insecure] [--deadline S] [--json]

Times TLS 1.2 vs 1.3 full handshakes per cipher suite (workers.load.handshake.handshake_matrix) now,
without a worker or the database: a discarded warm-up, then --repeats rounds of every cell with the
versions interleaved; each cell lasts at most --seconds (like ab -t; --per-agent is a cap). Per cell: the
median handshake time over the repeats with its 95 % interval, and
the rate over each cell's end-to-end wall time (set-up included); TLS 1.3 vs 1.2 signed, negative when
TLS 1.3 is faster. The process's own start-up is reported apart. Like `loadtest`, certificates are not
checked unless --ca-file is given. Exit 0 when it ran, 2 on bad arguments, when the pre-flight
handshake fails (as for a run from the app), when nothing connected, when every handshake timed out
for LOAD_STALL_SECONDS (`stalled`) or when the matrix was not done by its deadline (`deadline`, default
the longest the plan can take plus 30 s, at least CLI_DEADLINE_SECONDS); with --json: {"error": {"code", "message"}, ...}. The target passes the SSRF
guard like `audit`.
"""

import math
import time

from tlsaudit.core.management.base import TARGET_HELP, TargetCommand, parse_ca_file, parse_int, parse_ip, reach
from tlsaudit.core.standalone import setting
from tlsaudit.core.terminal import startup_line, startup_s
from tlsaudit.domain import stats
from tlsaudit.domain.handshake_stats import cell_rows, compare_resumption, compare_versions
from tlsaudit.domain.hostnames import AddressError, parse_address
from tlsaudit.loadtests.plans import WORST_CASE_SUITES
from workers.load.handshake import (
    TLS13_STANDARD_SUITES,
    HandshakeError,
    handshake_matrix,
    iana_name,
    openssl_name,
    suite_version,
)

MAX_DEADLINE_S = 3600
CELL_SECONDS = 2.0          # each cell lasts at most this long (ab -t); --per-agent is only a cap
CELL_OVERHEAD_S = 0.5       # a cell's contexts and threads, beside its seconds
DEADLINE_MARGIN_S = 30
STALL_MARGIN_S = 5.0
MAX_AGENTS = 200
MAX_PER_AGENT = 1000
MAX_REPEATS = 20
DEFAULT_REPEATS = 3
MAX_HANDSHAKES = 100_000   # per run, all cells and repeats together: the CLI is not a flood tool
KNOWN_VERSIONS = ("1.2", "1.3")
COLUMNS = ("version", "suite", "agents", "runs", "n", "median", "95 % interval", "mean", "hs/s", "failures")


class Command(TargetCommand):
    help = "Time TLS 1.2 vs 1.3 full handshakes per cipher suite and concurrency (text table, or JSON)."
    engine_argument_errors = (HandshakeError,)

    def add_arguments(self, parser):
        parser.add_argument("target", nargs="?", default="", help=f"{TARGET_HELP} (default port 443)")
        self.add_ip_argument(parser)
        parser.add_argument("--versions", default="1.2,1.3", help="comma-separated: 1.2,1.3 (default %(default)s)")
        parser.add_argument("--suites", default="",
                            help="comma-separated IANA or OpenSSL suite names (default: TLS 1.3's three, "
                                 "and the TLS 1.2 ECDHE AEAD suites the server accepts)")
        parser.add_argument("--agents", default="10", help="concurrent agents, one level or a list: 10,25,50")
        parser.add_argument("--per-agent", default=None,
                            help=f"at most this many handshakes per agent and cell (default {MAX_PER_AGENT}: the "
                                 "cell's --seconds decide)")
        parser.add_argument("--seconds", default=str(CELL_SECONDS),
                            help="each cell lasts at most this long, like ab -t (default %(default)s)")
        parser.add_argument("--repeats", default=str(DEFAULT_REPEATS),
                            help="rounds of every cell after the warm-up (default %(default)s; 1 = no interval)")
        parser.add_argument("--resume", action="store_true", help="also time resumed handshakes per version")
        parser.add_argument("--timeout", default="10", help="seconds per connection (default %(default)s)")
        self.add_ca_file_argument(parser)
        self.add_insecure_argument(parser)
        parser.add_argument("--deadline", default=None,
                            help="end with an error if the matrix is not done after this many seconds (default: "
                                 f"the longest the plan can take, +{DEADLINE_MARGIN_S} s, at least "
                                 f"{setting('CLI_DEADLINE_SECONDS')})")
        self.add_json_argument(parser)

    def parse(self, options):
        return parse_arguments(options)

    def run(self, plan):
        target, error = reach(plan["host"], plan["port"], plan["ip"])
        if target is None:
            self.fail(error.code, error.message, host=plan["host"], port=plan["port"])
        if error is not None:
            self.fail(error.code, error.message, host=target.host, port=target.port, ip=target.ip)
        stall_s = max(float(setting("LOAD_STALL_SECONDS")), plan["timeout"] + STALL_MARGIN_S)
        startup = startup_s()
        progress = self.progress(unit="handshakes")
        progress.note(f"Plan: {plan['cells']} cells x {plan['repeats']} repeats of at most {plan['seconds']:g} s each "
                      f"after a warm-up per version: at most {plan['planned_s']:.0f} s")
        cells = handshake_matrix(target.host, target.port, ip=target.ip, versions=plan["versions"],
                                 suites=plan["suites"], agents_levels=plan["agents"],
                                 per_agent=plan["per_agent"], resume=plan["resume"], timeout_s=plan["timeout"],
                                 repeats=plan["repeats"], ca_file=plan["ca_file"],
                                 insecure=plan["ca_file"] is None, on_progress=progress,
                                 deadline_s=max(0.001, self.started + plan["deadline"] - time.monotonic()),
                                 stall_s=stall_s, cell_s=plan["seconds"])
        progress.finish(sum(c.get("count") or 0 for c in cells))   # timed ones (failures and priming aside)
        ended = ended_early(cells, target, plan["deadline"], stall_s)
        if ended is not None:
            self.fail(*ended, host=target.host, port=target.port, ip=target.ip,
                      cells=[without_histograms(c) for c in cells])
        measured = [c for c in cells if not c.get("warmup")]
        if not any(c.get("count") for c in measured):
            self.fail("no_handshake", nothing_connected(cells), host=target.host, port=target.port,
                      ip=target.ip, cells=[without_histograms(c) for c in cells])
        report = {"host": target.host, "port": target.port, "ip": target.ip, "repeats": plan["repeats"],
                  "verified": plan["ca_file"] is not None, "startup_s": startup, "planned_s": plan["planned_s"],
                  "seconds": plan["seconds"],
                  "cells": [without_histograms(c) for c in cells], "summary": cell_rows(measured),
                  "tls13_vs_tls12": compare_versions(measured), "resumption": compare_resumption(measured)}
        self.finish(report if self.as_json else render_table(report))


def parse_arguments(options) -> dict:
    try:
        address = parse_address(options["target"])
    except AddressError as exc:
        raise ValueError(f"target: {exc}") from None
    if address.scheme == "http":
        raise ValueError("target: handshakes are timed over TLS; give the HTTPS host, not http://")
    versions = split_list(options["versions"], "--versions")
    for v in versions:
        if v not in KNOWN_VERSIONS:
            raise ValueError(f"--versions: {v!r} is not a TLS version this tool times (use 1.2 and/or 1.3)")
    suites = split_list(options["suites"], "--suites", allow_empty=True)
    check_suites(suites, versions)
    agents = [parse_int(a, "--agents", 1, MAX_AGENTS) for a in split_list(options["agents"], "--agents")]
    given = options.get("per_agent") not in (None, "")
    per_agent = parse_int(options["per_agent"], "--per-agent", 1, MAX_PER_AGENT) if given else MAX_PER_AGENT
    repeats = parse_int(options.get("repeats") or DEFAULT_REPEATS, "--repeats", 1, MAX_REPEATS)
    timeout = parse_int(options["timeout"], "--timeout", 1, 120)
    ca_file = parse_ca_file(options.get("ca_file"), options.get("insecure"))
    seconds = parse_seconds(options.get("seconds") or CELL_SECONDS)
    cells = len(agents) * sum(len([s for s in suites if suite_version(iana_name(s)) == v]) or WORST_CASE_SUITES[v]
                              for v in dict.fromkeys(versions))
    planned = longest_s(cells, repeats, options["resume"], len(versions), seconds)
    deadline = (parse_int(options["deadline"], "--deadline", 5, MAX_DEADLINE_S) if options.get("deadline") else
                default_deadline(planned))
    if given and cells * per_agent * max(agents) * repeats > MAX_HANDSHAKES:
        raise ValueError(f"this run could make up to {cells * per_agent * max(agents) * repeats:,} handshakes; "
                         f"the limit is {MAX_HANDSHAKES:,} (lower --agents, --per-agent or --repeats)")
    return {"host": address.hostname, "port": address.port or 443, "ip": parse_ip(options.get("ip")),
            "versions": tuple(dict.fromkeys(versions)), "suites": tuple(suites) or None,
            "agents": tuple(dict.fromkeys(agents)), "per_agent": per_agent, "resume": options["resume"],
            "timeout": float(timeout), "repeats": repeats, "ca_file": ca_file, "deadline": float(deadline),
            "seconds": seconds, "cells": cells, "planned_s": planned}


def parse_seconds(text) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--seconds: {text!r} is not a number of seconds") from None
    if not 0.5 <= value <= 30:
        raise ValueError("--seconds must be between 0.5 and 30")
    return value


def longest_s(cells: int, repeats: int, resume: bool, versions: int, seconds: float) -> float:
    """The longest the matrix can take: every cell at its seconds, warm-ups and resumed cells included,
    each version counted with all its candidate suites unless --suites names them (printed before it
    starts, `planned_s` in --json)."""
    runs = versions + repeats * (cells + (versions if resume else 0))
    return runs * (seconds + CELL_OVERHEAD_S)


def default_deadline(planned_s: float) -> int:
    """The plan's longest time plus a margin; never under CLI_DEADLINE_SECONDS."""
    return max(int(setting("CLI_DEADLINE_SECONDS")), math.ceil(planned_s) + DEADLINE_MARGIN_S)


def split_list(text, option: str, allow_empty: bool = False) -> list[str]:
    items = [item.strip() for item in str(text or "").split(",") if item.strip()]
    if not items and not allow_empty:
        raise ValueError(f"{option}: give at least one value")
    return items


def check_suites(suites: list[str], versions: list[str]) -> None:
    """Known names only, and each must belong to one of the asked versions (no silent no-op)."""
    for suite in suites:
        version = suite_version(iana_name(suite))
        try:
            if version == "1.2":
                openssl_name(suite)
            elif suite not in TLS13_STANDARD_SUITES:
                raise HandshakeError(f"unknown TLS 1.3 cipher suite {suite!r} (known: {', '.join(TLS13_STANDARD_SUITES)})")
        except HandshakeError as exc:
            raise ValueError(f"--suites: {exc}") from None
        if version not in versions:
            raise ValueError(f"--suites: {suite} is a TLS {version} suite but --versions does not include {version}")


def ended_early(cells: list[dict], target, deadline_s: float, stall_s: float) -> tuple[str, str] | None:
    """(code, message) when the stall bound or the deadline ended the matrix (cells with rounds left)."""
    done = sum(c.get("count", 0) for c in cells)
    if any(c.get("stalled") for c in cells):
        return "stalled", (f"Every TLS handshake with {target.host} ({target.ip}:{target.port}) timed out for "
                           f"{stall_s:g} s, so the run was stopped ({done} timed before): the server stalls "
                           "handshakes, or sends them a few bytes at a time.")
    if any(c.get("cancelled") for c in cells):
        return "deadline", (f"The handshake matrix against {target.host} ({target.ip}:{target.port}) was not done "
                            f"by its {deadline_s:g} s deadline ({done} handshakes timed): the server answers too "
                            "slowly, or stalls some handshakes. Give --deadline more seconds for a larger run.")
    return None


def without_histograms(cell: dict) -> dict:
    return {k: v for k, v in cell.items() if k != "histograms"}


def nothing_connected(cells: list[dict]) -> str:
    reasons: dict[str, int] = {}
    for cell in cells:
        for reason, n in {**cell.get("failures", {}), **cell.get("flagged", {})}.items():
            reasons[reason] = reasons.get(reason, 0) + n
        if cell.get("skipped"):
            reasons[cell["skipped"]] = reasons.get(cell["skipped"], 0) + 1
    detail = "; ".join(f"{r} ({n})" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1])) or "no attempt"
    return f"No handshake completed: {detail}."


def fmt(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def interval_text(estimate: dict, digits: int = 2) -> str:
    if estimate["low"] is None:
        return "-"
    return f"[{fmt(estimate['low'], digits)}, {fmt(estimate['high'], digits)}]"


def render_table(report: dict) -> str:
    rows = []
    for c in report["summary"]:
        suite = c["suite"] or "(none)"
        if c["mode"] == "resumed":
            suite += " [resumed]"
        rows.append((f"TLS {c['version']}", suite, str(c["agents"]), str(c["repeats"]), str(c["count"]),
                     fmt(c["p50_ms"]["median"]), interval_text(c["p50_ms"]),
                     fmt(c["mean_ms"]), fmt(c["handshakes_per_s"]["median"], 1), str(c["failures"])))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(COLUMNS)] if rows else [len(h) for h in
                                                                                                  COLUMNS]
    repeats = report["repeats"]
    lines = [f"TLS handshakes to {report['host']}:{report['port']} ({report['ip']}), times in ms",
             f"{repeats} repeat{'s' if repeats > 1 else ''} per cell after a discarded warm-up, versions interleaved; "
             "median [95 % interval] of the repeats' median handshake times; hs/s over each cell's end-to-end wall "
             "time (set-up included)" + ("; certificates verified" if report["verified"] else ""), ""]
    lines.append("  ".join(h.ljust(w) for h, w in zip(COLUMNS, widths)).rstrip())
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    cells = [c for c in report["cells"] if not c.get("warmup")]
    notes = [f"  {c.get('requested_suite') or c['version']} (repeat {c.get('repeat', 0) + 1}): " + ", ".join(
        f"{reason} x{n}" for reason, n in {**c.get("failures", {}), **c.get("flagged", {})}.items())
        for c in cells if c.get("failures") or c.get("flagged")]
    notes += [f"  TLS {c['version']}: {c['skipped']}" for c in cells if c.get("skipped")]
    notes += list(dict.fromkeys(f"  TLS {c['version']} resumed: {c['resumption_note']}" for c in cells
                                if c.get("mode") == "resumed" and c.get("resumption_note")))
    notes += [f"  TLS {c['version']} {c['suite']} ({c['agents']} agents): nothing measured, {c['too_short']}"
              for c in report["summary"] if c["too_short"]]
    if notes:
        lines += ["", "Failures and notes:", *notes]
    if report["tls13_vs_tls12"]:
        lines += ["", "TLS 1.3 vs 1.2 (the median of every handshake, rounds paired; negative = TLS 1.3 faster):"]
        lines += [f"  {r['family']:18} agents {r['agents']:>3}: 1.2 {fmt(r['tls12_p50_ms'])} ms, "
                  f"1.3 {fmt(r['tls13_p50_ms'])} ms, "
                  f"{stats.change_text(r['tls13_vs_tls12'], side='TLS 1.3')}" for r in report["tls13_vs_tls12"]]
    resumed = [r for r in report["resumption"] if r["resumed_p50_ms"] is not None]
    if resumed:
        lines += ["", "Resumed vs full (median handshake time; negative = resuming faster):"]
        lines += [f"  TLS {r['version']} {r['suite']}: full {fmt(r['full_p50_ms'])} ms, resumed "
                  f"{fmt(r['resumed_p50_ms'])} ms, {stats.change_text(r['resumed_vs_full'], side='resumed')}"
                  for r in resumed]
    if report["startup_s"] is not None:
        lines += ["", startup_line(report["startup_s"])]
    return "\n".join(lines) + "\n"
