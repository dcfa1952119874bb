"""The base of the one-target commands: `audit`, `loadtest`, `overhead`, `handshakes` and `probe`.

Each takes one target (a host or a URL), runs an engine on it now, without a worker or the database,
and prints a report, or one JSON object with --json. What they share lives here:

- start-up: the parent class is `command_base()` (tlsaudit/core/standalone.py: Django's BaseCommand,
  or LeanCommand in a process that loaded no Django module), and no system checks run;
- the shared options (--ip, --ca-file, --insecure, --json), each added where the command lists it
  and in its words, so every command's help reads as before, and their parsing;
- one path through a run: `handle` parses the options (`parse`, a ValueError is an invalid argument),
  then `run`s; the engine's own refusal of an argument (`engine_argument_errors`) is one too;
- failing: `fail()` prints {"error": {"code", "message"}, ...} with --json, else "<command> failed:
  <message>" on stderr, and exits 2; `finish()` prints the result and exits 0;
- the progress rule: ab's heartbeat on stderr at a terminal, silent when piped or with --json;
- reaching the target as the app does: the SSRF guard pins one address, then the pre-flight.

Why tlsaudit/core/management/base.py: it imports the engines' target resolution and pre-flight, as
the commands it serves do, and only a command imports it; the layering guard (tests/test_layering.py)
lets modules under management/ import engines, and the web process never loads one. A command module
is imported only when its command runs (`manage.py help` lists them by file name), so these imports
cost nothing elsewhere. It loads no Django module itself: the lean commands must not.
"""

from __future__ import annotations

import ipaddress
import json
import sys
import time
from pathlib import Path
from typing import NoReturn

from tlsaudit.core.standalone import command_base, setting
from tlsaudit.core.terminal import Progress, failure_text
from workers.net.errors import TargetError
from workers.net.reach import engine_preflight
from workers.net.target import ResolvedTarget, resolve_target

EXIT_OK, EXIT_FAILED = 0, 2
# What "this target cannot be reached" is raised as, by every engine (ProbeError was merged into TargetError).
UNREACHABLE = (TargetError,)
CA_FILE_READ_BYTES = 1_000_000  # the PEM marker must be in a CA file's first megabyte


class TargetCommand(command_base()):
    """A one-target command: define `add_arguments`, `parse(options)` and `run(plan)`."""

    # No database, URLs, admin or templates are used: the checks only add ~0.15 s of start-up.
    requires_system_checks = []
    # Exceptions by which the engine refuses an argument the parsing let through (exit 2, invalid_argument).
    engine_argument_errors: tuple[type[Exception], ...] = ()

    def handle(self, *args, **options):
        self.as_json = options["json"]
        self.started = time.monotonic()
        try:
            plan = self.parse(options)
        except ValueError as exc:
            self.fail("invalid_argument", str(exc))
        try:
            self.run(plan)
        except self.engine_argument_errors as exc:
            self.fail("invalid_argument", str(exc))

    def parse(self, options):  # pragma: no cover - every command defines it
        raise NotImplementedError("a TargetCommand subclass must define parse(options)")

    def run(self, plan) -> NoReturn:  # pragma: no cover - every command defines it
        raise NotImplementedError("a TargetCommand subclass must define run(plan)")

    # --- the shared options, added where each command lists them

    def add_ip_argument(self, parser, help: str = "connect to this IP instead of resolving HOST") -> None:
        parser.add_argument("--ip", help=help)

    def add_ca_file_argument(self, parser, help: str = "verify the certificate against this PEM CA file "
                                                      "(plus system roots)") -> None:
        parser.add_argument("--ca-file", help=help)

    def add_insecure_argument(self, parser) -> None:
        parser.add_argument("--insecure", action="store_true",
                            help="do not verify the certificate (the default, like ab; exclusive with --ca-file)")

    def add_json_argument(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    # --- output and exit codes

    @property
    def name(self) -> str:
        return type(self).__module__.rsplit(".", 1)[-1]

    def fail(self, code: str, message: str, **extra) -> NoReturn:
        if self.as_json:
            self.stdout.write(json.dumps({**error_json(code, message), **extra}, indent=2))
        else:
            self.stderr.write(f"{self.name} failed: {failure_text(code, message)}")
        sys.exit(EXIT_FAILED)

    def finish(self, result: dict | str) -> NoReturn:
        """Print the result (a dict as one JSON object, a text as it is) and exit 0."""
        self.stdout.write(json.dumps(result, indent=2) if isinstance(result, dict) else result)
        sys.exit(EXIT_OK)

    def exit(self, ok: bool) -> NoReturn:
        sys.exit(EXIT_OK if ok else EXIT_FAILED)

    def progress(self, unit: str = "requests") -> Progress:
        return Progress.for_command(self, self.as_json, unit=unit)


def error_json(code: str, message: str) -> dict:
    return {"error": {"code": code, "message": failure_text(code, message)}}


# --- parsing the shared options: a ValueError names the option


TARGET_HELP = "HOST, HOST:PORT or https://HOST[:PORT]/PATH (http:// for the plain HTTP side)"


def as_url(text: str | None) -> str:
    """Every command's one target syntax: a bare HOST or HOST:PORT is the HTTPS site
    https://HOST[:PORT]/; a URL stays as typed."""
    text = (text or "").strip()
    return text if not text or "://" in text else f"https://{text}/"


def side_ports(scheme: str, typed_port: int | None, given: dict[str, int | None]) -> dict[str, int]:
    """{"http": port, "https": port} of a command that loads both sides (`overhead`, `probe`): the target's
    typed port is its scheme's side, --http-port / --https-port (`given`, parsed) the other's, default 80 /
    443. An option naming the target's own side must agree with it: choosing one of two given values
    silently would measure what the user did not ask for."""
    if typed_port and given.get(scheme) and given[scheme] != typed_port:
        raise ValueError(f"--{scheme}-port: {given[scheme]} differs from the target's port {typed_port}")
    ports = {**given, scheme: typed_port or given.get(scheme)}
    return {"http": ports.get("http") or 80, "https": ports.get("https") or 443}


def parse_int(text, option: str, low: int, high: int, unit: str = "") -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ValueError(f"{option}: {text!r} is not a whole number{f' of {unit}' if unit else ''}") from None
    if not low <= value <= high:
        raise ValueError(f"{option} must be between {low} and {high}{f' {unit}' if unit else ''}, got {value}")
    return value


def parse_ip(text, strip: bool = False) -> str | None:
    """--ip in its compressed form, None when not given. `strip`: `loadtest` and `overhead` have
    always trimmed spaces around it, the other commands refuse them."""
    if not text:
        return None
    try:
        return ipaddress.ip_address(str(text).strip() if strip else text).compressed
    except ValueError:
        raise ValueError(f"--ip: {text!r} is not an IPv4 or IPv6 address") from None


def read_ca_file(name: str) -> bytes:
    """The head of a PEM CA file given with --ca-file, once it is known to be one."""
    path = Path(name)
    if not path.is_file():
        raise ValueError(f"--ca-file: {name} does not exist")
    try:
        with path.open("rb") as pem:
            head = pem.read(CA_FILE_READ_BYTES)
    except OSError as exc:
        raise ValueError(f"--ca-file: {name} cannot be read ({exc.strerror})") from None
    if b"-----BEGIN CERTIFICATE-----" not in head:
        raise ValueError(f"--ca-file: {name} is not a PEM certificate file")
    return head


def parse_ca_file(ca_file: str | None, insecure: bool) -> str | None:
    """--ca-file or --insecure (certificates are not checked unless a CA file is given)."""
    if ca_file and insecure:
        raise ValueError("--ca-file and --insecure exclude each other: verify against a CA, or don't verify")
    if not ca_file:
        return None
    read_ca_file(ca_file)
    return str(Path(ca_file))


# --- reaching the target as a run from the app does


def pin_target(host: str, port: int, ip: str | None) -> ResolvedTarget:
    """Resolve once through the SSRF guard and pin the checked address; raises one of UNREACHABLE."""
    return resolve_target(host, port, pinned_ip=ip, allow_private=setting("ALLOW_PRIVATE_TARGETS"))


def preflight(host: str, ip: str, port: int, tls: bool = True):
    """The app's pre-flight (one TLS handshake, or a TCP connect): the TargetError to stop with, or None."""
    return engine_preflight(ip, port, host, setting("SCAN_NETWORK_TIMEOUT"), tls=tls)


def reach(host: str, port: int, ip: str | None, tls: bool = True) -> tuple[ResolvedTarget | None, Exception | None]:
    """`pin_target`, then `preflight`: (target, None) when the engine may go on, else (the target, or
    None when the guard refused it, and the error)."""
    try:
        target = pin_target(host, port, ip)
    except UNREACHABLE as exc:
        return None, exc
    return target, preflight(target.host, target.ip, target.port, tls=tls)
