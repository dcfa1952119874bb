"""python manage.py audit HOST[:PORT] [HOST[:PORT] ...] [--ip IP] [--ca-file PEM] [--json] [--pdf FILE] [--deadline S]

A target may name another TLS service than HTTPS by its scheme (domain/services.py): smtp://HOST[:PORT]
(STARTTLS, port 25 by default), imaps://HOST, postgres://HOST... A bare HOST, https:// and http://
are HTTPS on port 443.

Runs audits synchronously: no worker, no broker, no database write. Exit status 0 when the audit ran
(whatever the grade), 2 when it could not (bad arguments, DNS, refused, no TLS, not done by the
deadline...). The audit ends by its deadline whatever the server does (workers/net/deadline.py).

With several targets they are audited concurrently in this process (the scan pool's engine and limits:
SCAN_POOL_THREADS audits at once, SCAN_CONNECTIONS_PER_IP connections per address), except that targets
on one address take turns, in the order given, each deadline starting with its turn; `--ip` pins them
all, and each prints as it finishes: with --json one compact JSON object per line, with a "target"
key (the argument as given). Exit 0 when every audit ran, 2 otherwise.
"""

import json
import queue
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tlsaudit.core.management.base import TargetCommand, error_json, parse_int, parse_ip, read_ca_file
from tlsaudit.core.standalone import setting
from tlsaudit.core.terminal import failure_text
from tlsaudit.domain.hostnames import AddressError, parse_address
from tlsaudit.domain.services import HTTPS, SERVICES, service_named
from workers.net.deadline import configure_gates
from workers.net.errors import TargetError
from workers.net.target import resolve_target
from workers.tls.engine import preload_sslyze, run_scan
from workers.tls.warmup import filter_sslyze_warnings, warm_up

# A per-socket timeout longer than the worker's hard limit (300 s by default) means nothing.
MAX_TIMEOUT_S = 300
MIN_DEADLINE_S, MAX_DEADLINE_S = 10, 3600
# Needed only once a scan is done: imported beside it (engine.preload_sslyze), not before it.
REPORT_MODULES = ("tlsaudit.domain.audit_report", "tlsaudit.audits.jsonreport", "tlsaudit.audits.textreport")


class Command(TargetCommand):
    help = "Audit one TLS server now and print a report (text, or one JSON object with --json)."

    def add_arguments(self, parser):
        # Optional for argparse so that a missing target gets the same JSON error as a bad one.
        parser.add_argument("target", nargs="*", default=[""],
                            help="HOST, HOST:PORT or https://HOST[:PORT]/ (default port 443), or another TLS "
                                 "service as SCHEME://HOST[:PORT] (smtp://, imaps://, postgres://...; default "
                                 "port the service's); several are audited concurrently")
        self.add_ip_argument(parser, help="connect to this IP instead of resolving HOST (every target)")
        self.add_ca_file_argument(parser, help="PEM file of CA certificates to trust besides the public stores")
        self.add_json_argument(parser)
        parser.add_argument("--pdf", metavar="FILE", help="also write the report as a PDF (printed by headless Chromium)")
        parser.add_argument("--timeout", default=str(setting("SCAN_NETWORK_TIMEOUT")),
                            help="per-socket network timeout in whole seconds (default %(default)s)")
        parser.add_argument("--deadline", default=str(setting("AUDIT_DEADLINE_SECONDS")),
                            help="the whole audit ends within this many seconds, finished or with an error "
                                 "(default %(default)s)")

    def handle(self, *args, **options):
        targets = options["target"] or [""]
        if len(targets) > 1:
            self.as_json = options["json"]
            return self.audit_batch(targets, options)
        return super().handle(*args, **{**options, "target": targets[0]})

    def parse(self, options):
        return parse_arguments(options), options.get("pdf")

    def run(self, plan):
        arguments, pdf = plan
        host, port = arguments[:2]
        filter_sslyze_warnings()
        preload_sslyze(*REPORT_MODULES)
        outcome = scan(arguments)
        if outcome.error is not None:
            self.fail(outcome.error.code, outcome.error.message, host=host, port=port,
                      duration_s=round(outcome.duration_s, 2))
        report = build_report_of(outcome)
        if pdf:
            try:
                write_pdf(pdf, outcome, report)
            except Exception as exc:  # noqa: BLE001 — Chromium missing or the file not writable: say so, exit 2
                self.fail("pdf_failed", f"the PDF could not be written: {exc}")
        self.finish(cli_json(outcome, report) if self.as_json else cli_text(outcome, report))

    def audit_batch(self, targets: list[str], options):
        """Audit every target concurrently; print each as it finishes; exit 0 only if all ran."""
        if options.get("pdf"):
            self.fail("invalid_argument", "--pdf takes one target")
        parsed, ran = [], []
        for target in targets:
            try:
                parsed.append((target, parse_arguments({**options, "target": target})))
            except ValueError as exc:
                self.write_batch_line(target, error=("invalid_argument", str(exc)))
                ran.append(False)
        if parsed:
            ran += self.run_batch(parsed)
        self.exit(all(ran))

    def run_batch(self, parsed: list[tuple[str, tuple]]) -> list[bool]:
        """One lane per address (lanes_by_address), SCAN_POOL_THREADS lanes at once: the targets that share
        an address take turns in the order given, each with its whole deadline from its turn, instead of
        sharing that address's connections until all of them run out of time."""
        warm_up()  # before the threads: sslyze's trust-store singleton is not thread-safe
        configure_gates(setting("SCAN_CONNECTIONS_PER_IP"), setting("SCAN_MAX_CONNECTIONS"))
        preload_sslyze(*REPORT_MODULES)
        lanes = lanes_by_address(parsed)
        finished: queue.Queue = queue.Queue()
        ran = []
        with ThreadPoolExecutor(max_workers=min(len(lanes), setting("SCAN_POOL_THREADS")),
                                thread_name_prefix="audit") as pool:
            for lane in lanes:
                pool.submit(run_lane, lane, finished.put)
            for _ in parsed:
                target, arguments, outcome = finished.get()
                if isinstance(outcome, Exception):
                    raise outcome   # a bug in the engine (it reports every failure of the server in the outcome)
                ran.append(self.print_outcome(target, arguments, outcome))
        return ran

    def print_outcome(self, target: str, arguments, outcome) -> bool:
        if outcome.error is not None:
            self.write_batch_line(target, error=(outcome.error.code, outcome.error.message), host=arguments[0],
                                  port=arguments[1], duration_s=round(outcome.duration_s, 2))
            return False
        report = build_report_of(outcome)
        if self.as_json:
            self.stdout.write(json.dumps({"target": target, **cli_json(outcome, report)}))
        else:
            self.stdout.write(cli_text(outcome, report))
        return True

    def write_batch_line(self, target: str, *, error: tuple[str, str], **extra) -> None:
        if self.as_json:
            self.stdout.write(json.dumps({"target": target, **error_json(*error), **extra}))
        else:
            self.stderr.write(f"{self.name} failed: {target}: {failure_text(*error)}")


def lanes_by_address(parsed: list[tuple[str, tuple]]) -> list[list[tuple[str, tuple]]]:
    """The targets grouped by the address they connect to (--ip, else the name resolved now, all names at
    once, and pinned, so the audit connects where it was grouped), each group in the order given. A name
    that does not resolve gets a lane of its own: its audit says why."""
    with ThreadPoolExecutor(max_workers=min(len(parsed), 16), thread_name_prefix="resolve") as pool:
        pinned = list(pool.map(lambda item: pin_address(item[1]), parsed))
    lanes: dict[str, list] = {}
    for (target, _), arguments in zip(parsed, pinned):
        lanes.setdefault(arguments[2] or f"{target} unresolved", []).append((target, arguments))
    return list(lanes.values())


def pin_address(arguments: tuple) -> tuple:
    """The target's arguments with its name resolved to the IP it will connect to (unchanged when --ip
    gave one, or when the name does not resolve)."""
    host, port, ip = arguments[:3]
    if ip is not None:
        return arguments
    try:
        resolved = resolve_target(host, port, allow_private=setting("ALLOW_PRIVATE_TARGETS"), timeout=arguments[4])
    except TargetError:
        return arguments
    return (host, port, resolved.ip, *arguments[3:])


def run_lane(lane: list[tuple[str, tuple]], done) -> None:
    """Audit one address's targets one after another; `done((target, arguments, outcome))` for each."""
    for target, arguments in lane:
        try:
            done((target, arguments, scan(arguments)))
        except Exception as exc:  # noqa: BLE001  (handed to the main thread, which raises it)
            done((target, arguments, exc))


def scan(arguments):
    """One audit by the scan engine, as the worker runs it (one retry), within its deadline."""
    host, port, ip, ca_file, timeout, deadline, service = arguments
    return run_scan(host, port, ip=ip, ca_file=ca_file, allow_private=setting("ALLOW_PRIVATE_TARGETS"),
                    network_timeout=timeout, max_retries=1,
                    per_server_connections=setting("SCAN_CONNECTIONS_PER_SERVER"), deadline_s=deadline,
                    service=service)


def parse_arguments(options) -> tuple:
    """(host, port, ip, ca_file, timeout, deadline, service) of one target."""
    try:
        address = parse_address(options["target"], services=True)
    except AddressError as exc:
        raise ValueError(f"target: {exc}") from None
    service = service_named(address.scheme if address.scheme in SERVICES else HTTPS)  # http:// is HTTPS
    ip = parse_ip(options.get("ip"))
    ca_file = options.get("ca_file")
    if ca_file:
        read_ca_file(ca_file)
    return (address.hostname, address.port or service.default_port, ip, ca_file,
            parse_int(options["timeout"], "--timeout", 1, MAX_TIMEOUT_S, unit="seconds"),
            parse_int(options["deadline"], "--deadline", MIN_DEADLINE_S, MAX_DEADLINE_S, unit="seconds"),
            service.scheme)


def build_report_of(outcome):
    from tlsaudit.domain.audit_report import build_report  # REPORT_MODULES: imported beside the scan

    return build_report(outcome.facts, outcome.mozilla)


def write_pdf(path: str, outcome, report) -> None:
    """The one-off audit as the site PDF report (tlsaudit/reports), printed by the reports engine."""
    from tlsaudit.reports.services import one_off_html  # its models need the app registry, loaded only for --pdf
    from workers.reports.pdf import render_pdf  # only --pdf prints (Chromium's driver)

    html = one_off_html(outcome.facts, report, outcome.duration_s)
    Path(path).write_bytes(render_pdf(html, footer=f"TLS report · {outcome.facts.host}:{outcome.facts.port}"))


def cli_json(outcome, report) -> dict:
    """The whole report (tlsaudit/audits/jsonreport.py; schema in docs/audit-report.schema.json)."""
    from tlsaudit.audits.jsonreport import audit_json  # REPORT_MODULES: imported beside the scan

    data = audit_json(outcome.facts, report, outcome.duration_s)
    if outcome.facts.service != HTTPS:     # HTTPS output names no service
        data.setdefault("service", outcome.facts.service)
    return data


def cli_text(outcome, report) -> str:
    """The text report; another service than HTTPS is named under the title line."""
    from tlsaudit.audits.textreport import render_text  # REPORT_MODULES: imported beside the scan

    text = render_text(outcome.facts, report, outcome.duration_s)
    if outcome.facts.service == HTTPS:
        return text
    line = f" Service: {service_named(outcome.facts.service).label}"
    if line in text:    # the report itself names it
        return text
    title, _, rest = text.partition("\n")
    return f"{title}\n{line}\n{rest}"
