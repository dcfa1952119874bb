"""python manage.py audit HOST[:PORT] [HOST[:PORT] ...] [--ip IP] [--ca-file PEM] [--json] [--pdf FILE] [--deadline S]

Runs audits synchronously: no worker, no broker, no database write. Exit status 0 when the audit ran
(whatever the grade), 2 when it could not (bad arguments, DNS, refused, no TLS, not done by the
deadline...). The audit ends by its deadline whatever the server does (workers/tls/deadline.py).

With several targets they are audited concurrently in this process (the scan pool's engine and limits:
SCAN_POOL_THREADS audits at once, SCAN_CONNECTIONS_PER_IP connections per address), `--ip` pins them
all, and each prints as it finishes: with --json one compact JSON object per line, with a "target"
key (the argument as given). Exit 0 when every audit ran, 2 otherwise.
"""

import ipaddress
import json
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from tlsaudit.audits.textreport import render_text
from tlsaudit.core.terminal import failure_text
from tlsaudit.domain.audit_report import build_report
from tlsaudit.domain.hostnames import AddressError, parse_address

EXIT_OK, EXIT_FAILED = 0, 2
# A per-socket timeout longer than the worker's hard limit (300 s by default) means nothing.
MAX_TIMEOUT_S = 300
MIN_DEADLINE_S, MAX_DEADLINE_S = 10, 3600


class Command(BaseCommand):
    help = "Audit one TLS server now and print a report (text, or one JSON object with --json)."
    # No database, URLs, admin or templates are used: the checks only add ~0.15 s of start-up.
    requires_system_checks = []

    def add_arguments(self, parser):
        # Optional for argparse so that a missing target gets the same JSON error as a bad one.
        parser.add_argument("target", nargs="*", default=[""],
                            help="HOST, HOST:PORT or https://HOST[:PORT]/ (default port 443); several are "
                                 "audited concurrently")
        parser.add_argument("--ip", help="connect to this IP instead of resolving HOST (every target)")
        parser.add_argument("--ca-file", help="PEM file of CA certificates to trust besides the public stores")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--pdf", metavar="FILE", help="also write the report as a PDF (printed by headless Chromium)")
        parser.add_argument("--timeout", default=str(settings.SCAN_NETWORK_TIMEOUT),
                            help="per-socket network timeout in whole seconds (default %(default)s)")
        parser.add_argument("--deadline", default=str(settings.AUDIT_DEADLINE_SECONDS),
                            help="the whole audit ends within this many seconds, finished or with an error "
                                 "(default %(default)s)")

    def handle(self, *args, **options):
        self.as_json = options["json"]
        targets = options["target"] or [""]
        if len(targets) > 1:
            return self.audit_batch(targets, options)
        options = {**options, "target": targets[0]}
        try:
            host, port, ip, ca_file, timeout, deadline = self.parse_arguments(options)
        except ValueError as exc:
            return self.fail("invalid_argument", str(exc))
        from workers.tls.engine import run_scan  # loads sslyze: only for this command
        from workers.tls.warmup import filter_sslyze_warnings

        filter_sslyze_warnings()
        outcome = run_scan(host, port, ip=ip, ca_file=ca_file, allow_private=settings.ALLOW_PRIVATE_TARGETS,
                           network_timeout=timeout, max_retries=1,
                           per_server_connections=settings.SCAN_CONNECTIONS_PER_SERVER, deadline_s=deadline)
        if outcome.error is not None:
            return self.fail(outcome.error.code, outcome.error.message, host=host, port=port,
                             duration_s=round(outcome.duration_s, 2))
        report = build_report(outcome.facts, outcome.mozilla)
        if options.get("pdf"):
            try:
                write_pdf(options["pdf"], outcome, report)
            except Exception as exc:  # noqa: BLE001 — Chromium missing or the file not writable: say so, exit 2
                return self.fail("pdf_failed", f"the PDF could not be written: {exc}")
        if self.as_json:
            self.stdout.write(json.dumps(cli_json(outcome, report), indent=2))
        else:
            self.stdout.write(render_text(outcome.facts, report, outcome.duration_s))
        sys.exit(EXIT_OK)

    def audit_batch(self, targets: list[str], options):
        """Audit every target concurrently; print each as it finishes; exit 0 only if all ran."""
        if options.get("pdf"):
            return self.fail("invalid_argument", "--pdf takes one target")
        parsed, ran = [], []
        for target in targets:
            try:
                parsed.append((target, self.parse_arguments({**options, "target": target})))
            except ValueError as exc:
                self.write_batch_line(target, error=("invalid_argument", str(exc)))
                ran.append(False)
        if parsed:
            ran += self.run_batch(parsed)
        sys.exit(EXIT_OK if all(ran) else EXIT_FAILED)

    def run_batch(self, parsed: list[tuple[str, tuple]]) -> list[bool]:
        from workers.tls.deadline import configure_gates
        from workers.tls.engine import run_scan
        from workers.tls.warmup import warm_up

        warm_up()  # before the threads: sslyze's trust-store singleton is not thread-safe
        configure_gates(settings.SCAN_CONNECTIONS_PER_IP, settings.SCAN_MAX_CONNECTIONS)

        def audit(arguments):
            host, port, ip, ca_file, timeout, deadline = arguments
            return run_scan(host, port, ip=ip, ca_file=ca_file, allow_private=settings.ALLOW_PRIVATE_TARGETS,
                            network_timeout=timeout, max_retries=1,
                            per_server_connections=settings.SCAN_CONNECTIONS_PER_SERVER, deadline_s=deadline)

        ran = []
        with ThreadPoolExecutor(max_workers=min(len(parsed), settings.SCAN_POOL_THREADS),
                                thread_name_prefix="audit") as pool:
            futures = {pool.submit(audit, arguments): (target, arguments) for target, arguments in parsed}
            for future in as_completed(futures):
                ran.append(self.print_outcome(*futures[future], future.result()))
        return ran

    def print_outcome(self, target: str, arguments, outcome) -> bool:
        if outcome.error is not None:
            self.write_batch_line(target, error=(outcome.error.code, outcome.error.message), host=arguments[0],
                                  port=arguments[1], duration_s=round(outcome.duration_s, 2))
            return False
        report = build_report(outcome.facts, outcome.mozilla)
        if self.as_json:
            self.stdout.write(json.dumps({"target": target, **cli_json(outcome, report)}))
        else:
            self.stdout.write(render_text(outcome.facts, report, outcome.duration_s))
        return True

    def write_batch_line(self, target: str, *, error: tuple[str, str], **extra) -> None:
        code, message = error[0], failure_text(*error)
        if self.as_json:
            self.stdout.write(json.dumps({"target": target, "error": {"code": code, "message": message}, **extra}))
        else:
            self.stderr.write(f"audit failed: {target}: {message}")

    def parse_arguments(self, options):
        try:
            address = parse_address(options["target"])
        except AddressError as exc:
            raise ValueError(f"target: {exc}") from None
        ip = options.get("ip")
        if ip:
            try:
                ip = ipaddress.ip_address(ip).compressed
            except ValueError:
                raise ValueError(f"--ip: {ip!r} is not an IPv4 or IPv6 address") from None
        ca_file = options.get("ca_file")
        if ca_file:
            path = Path(ca_file)
            if not path.is_file():
                raise ValueError(f"--ca-file: {ca_file} does not exist")
            try:
                with path.open("rb") as pem:
                    head = pem.read(1_000_000)
            except OSError as exc:
                raise ValueError(f"--ca-file: {ca_file} cannot be read ({exc.strerror})") from None
            if b"-----BEGIN CERTIFICATE-----" not in head:
                raise ValueError(f"--ca-file: {ca_file} is not a PEM certificate file")
        return (address.hostname, address.port or 443, ip, ca_file, parse_timeout(options["timeout"]),
                parse_deadline(options["deadline"]))

    def fail(self, code: str, message: str, **extra):
        if self.as_json:
            self.stdout.write(json.dumps({"error": {"code": code, "message": failure_text(code, message)}, **extra}, indent=2))
        else:
            self.stderr.write(f"audit failed: {failure_text(code, message)}")
        sys.exit(EXIT_FAILED)


def write_pdf(path: str, outcome, report) -> None:
    """The one-off audit as the site PDF report (tlsaudit/reports), printed by the reports engine."""
    from tlsaudit.reports.services import one_off_html
    from workers.reports.pdf import render_pdf

    html = one_off_html(outcome.facts, report, outcome.duration_s)
    Path(path).write_bytes(render_pdf(html, footer=f"TLS report · {outcome.facts.host}:{outcome.facts.port}"))


def parse_timeout(text) -> int:
    """Whole seconds per socket operation: sslyze's JSON model refuses 0.5, NaN hung the scan, inf crashed it."""
    try:
        timeout = int(str(text).strip())
    except ValueError:
        raise ValueError(f"--timeout: {text!r} is not a whole number of seconds") from None
    if not 1 <= timeout <= MAX_TIMEOUT_S:
        raise ValueError(f"--timeout must be between 1 and {MAX_TIMEOUT_S} seconds, got {timeout}")
    return timeout


def parse_deadline(text) -> int:
    try:
        deadline = int(str(text).strip())
    except ValueError:
        raise ValueError(f"--deadline: {text!r} is not a whole number of seconds") from None
    if not MIN_DEADLINE_S <= deadline <= MAX_DEADLINE_S:
        raise ValueError(f"--deadline must be between {MIN_DEADLINE_S} and {MAX_DEADLINE_S} seconds, got {deadline}")
    return deadline


def cli_json(outcome, report) -> dict:
    """The whole report (tlsaudit/audits/jsonreport.py; schema in docs/audit-report.schema.json)."""
    from tlsaudit.audits.jsonreport import audit_json

    return audit_json(outcome.facts, report, outcome.duration_s)
