"""A lab of local HTTPS servers with known configurations and known expected grades.

One nginx master serves every entry of `FIXTURES` on its own 127.0.0.1 port (plus a plain-HTTP
port each). Expected grades follow /work/shared/grading.md (the "SSL Labs 2009r (this spec)"
column), for a scan of hostname "localhost" pinned to 127.0.0.1 with `TlsLab.ca_file` as custom CA.

Use from pytest (a plugin: tests/conftest.py registers this module in pytest_plugins):

    def test_it_grades_tls10_as_b(tls_lab):
        port = tls_lab.port("b_tls10_enabled")
        assert tls_lab.spec("b_tls10_enabled").grade == "B"

Outside pytest (bench scripts, load tests): `with start_lab() as lab: ...`.
"""

from __future__ import annotations

import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.pki import EXPIRED_WINDOW, TestPki, write_dh_params, write_file

__all__ = ["FIXTURES", "NGINX", "ServerSpec", "TlsLab", "nginx_available", "require_nginx", "start_lab", "tls_lab"]

NGINX = Path(os.environ.get("TLS_LAB_NGINX", "/usr/sbin/nginx"))
HOSTNAME = "localhost"
IP = "127.0.0.1"
HSTS_ONE_YEAR = "max-age=31536000"
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
# Field order of the access log; issue #4 reads `$ssl_session_reused` and `$connection_requests`.
LOG_FIELDS = ("ssl_protocol", "ssl_cipher", "ssl_session_reused", "connection", "connection_requests",
              "status", "request")

ECDHE_RSA_AEAD = ("ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305")
ECDHE_ECDSA_AEAD = ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
                    "ECDHE-ECDSA-CHACHA20-POLY1305")
ECDHE_RSA_CBC_SHA1 = ("ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA")
ECDHE_RSA_CBC = ECDHE_RSA_CBC_SHA1 + ("ECDHE-RSA-AES128-SHA256", "ECDHE-RSA-AES256-SHA384")
RSA_KX_AEAD = ("AES128-GCM-SHA256", "AES256-GCM-SHA384")
TLS12_13 = ("TLSv1.2", "TLSv1.3")
ALL_TLS = ("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")


@dataclass(frozen=True)
class ServerSpec:
    """One server configuration and what a correct grader must say about it.

    `ciphers` is the exact set of TLS <= 1.2 suites offered (OpenSSL names); TLS 1.3 always offers
    OpenSSL's three default suites. `score` is (protocol, key exchange, cipher, total) per §2.
    `caps`, `warnings` and `trust` are lowercase keywords the matching cap reason, warning or
    trust finding should contain (match case-insensitively).
    """

    name: str
    why: str
    grade: str
    grade_ignoring_trust: str
    score: tuple[int, int, int, int]
    protocols: tuple[str, ...] = TLS12_13
    ciphers: tuple[str, ...] = ECDHE_RSA_AEAD
    key: str = "rsa2048"
    hsts: str | None = None
    leaf: str = "good"  # good | expired | self_signed | wrong_name
    send_chain: bool = True
    dh_group: str | None = None  # "dh1024" | "dh2048" (pki.DH_GROUPS)
    ecdh_curve: str | None = None  # None = nginx default "auto" (X25519:P-256:X448:P-521:P-384)
    seclevel: int | None = None  # appended as @SECLEVEL=n: TLS 1.0/1.1 and RSA-1024/DH-1024 need it
    caps: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    trust: tuple[str, ...] = ()
    role: str = "grade"  # grade | load
    extra: tuple[str, ...] = field(default=())  # verbatim nginx directives

    @property
    def key_type(self) -> str:
        return "EC" if self.key.startswith("ec") else "RSA"

    @property
    def key_bits(self) -> int:
        return int(self.key[2:] if self.key.startswith("ec") else self.key[3:])

    @property
    def trusted(self) -> bool:
        return self.leaf == "good" and self.send_chain

    @property
    def keywords(self) -> tuple[str, ...]:
        return self.caps + self.warnings + self.trust


def entry(name: str, **kwargs) -> tuple[str, ServerSpec]:
    return name, ServerSpec(name=name, **kwargs)


FIXTURES: dict[str, ServerSpec] = dict(
    [
        entry("a_plus_ecdsa_tls13_hsts", grade="A+", grade_ignoring_trust="A+", score=(100, 90, 90, 93),
              protocols=("TLSv1.3",), ciphers=(), key="ec256", hsts=HSTS_ONE_YEAR,
              why="TLS 1.3 only, P-256 (~3072-bit RSA -> 90), AES128/256+ChaCha -> 90; HSTS 1 y; no warnings"),
        entry("a_plus_rsa_hsts", grade="A+", grade_ignoring_trust="A+", score=(100, 90, 90, 93),
              hsts=HSTS_ONE_YEAR, why="matrix row 1: TLS 1.2+1.3, RSA-2048, ECDHE AEAD, HSTS >= 180 d"),
        entry("a_plus_ecdsa_p384_only", grade="A+", grade_ignoring_trust="A+", score=(100, 100, 90, 96),
              ciphers=ECDHE_ECDSA_AEAD, key="ec384", ecdh_curve="secp384r1", hsts=HSTS_ONE_YEAR,
              why="P-384 cert and P-384 as the only ECDHE group: every key is >= 7680-bit RSA-equivalent -> kx 100"),
        entry("a_plus_rsa_dhe2048_hsts", grade="A+", grade_ignoring_trust="A+", score=(100, 90, 90, 93),
              ciphers=ECDHE_RSA_AEAD + ("DHE-RSA-AES128-GCM-SHA256",), dh_group="dh2048", hsts=HSTS_ONE_YEAR,
              why="row 1 plus DHE with RFC 7919 ffdhe2048: DH 2048 scores 90 like RSA-2048, no cap"),
        entry("a_tls12_13_no_hsts", grade="A", grade_ignoring_trust="A", score=(100, 90, 90, 93),
              why="row 2a: no HSTS is not a warning, just no A+"),
        entry("a_hsts_short", grade="A", grade_ignoring_trust="A", score=(100, 90, 90, 93), hsts="max-age=86400",
              why="row 2b: HSTS shorter than 180 d: no A+, and not a warning under 2009r"),
        entry("a_minus_hsts_zero", grade="A-", grade_ignoring_trust="A-", score=(100, 90, 90, 93), hsts="max-age=0",
              warnings=("hsts",), why="row 2c: HSTS max-age=0 (disabled) is a warning -> A-"),
        entry("a_minus_tls12_only", grade="A-", grade_ignoring_trust="A-", score=(100, 90, 90, 93),
              protocols=("TLSv1.2",), hsts=HSTS_ONE_YEAR, warnings=("tls 1.3",),
              why="row 3: no TLS 1.3 is a warning under 2009r -> A- even with good HSTS"),
        entry("b_tls10_enabled", grade="B", grade_ignoring_trust="B", score=(95, 90, 90, 91), protocols=ALL_TLS,
              ciphers=ECDHE_RSA_AEAD + ECDHE_RSA_CBC_SHA1, seclevel=0, caps=("tls 1.0", "tls 1.1"),
              why="row 4: TLS 1.0 and 1.1 offered -> B (2020 rule)"),
        entry("b_no_forward_secrecy", grade="B", grade_ignoring_trust="B", score=(100, 90, 90, 93),
              protocols=("TLSv1.2",), ciphers=RSA_KX_AEAD, caps=("forward secrecy",), warnings=("tls 1.3",),
              why="row 6: static RSA key exchange only -> no FS -> B"),
        entry("b_cbc_only", grade="B", grade_ignoring_trust="B", score=(100, 90, 90, 93),
              protocols=("TLSv1.2",), ciphers=ECDHE_RSA_CBC, caps=("aead",), warnings=("tls 1.3",),
              why="row 7: ECDHE CBC suites only -> no AEAD -> B (testssl says A-: its AEAD cap never fires)"),
        entry("b_rsa1024", grade="B", grade_ignoring_trust="B", score=(100, 80, 90, 90), key="rsa1024",
              hsts=HSTS_ONE_YEAR, seclevel=0, caps=("below 2048-bit",),
              why="row 8: RSA-1024 leaf -> key exchange 80 -> B"),
        entry("b_dh1024", grade="B", grade_ignoring_trust="B", score=(100, 80, 90, 90),
              ciphers=ECDHE_RSA_AEAD + ("DHE-RSA-AES128-GCM-SHA256",), dh_group="dh1024", seclevel=0,
              hsts=HSTS_ONE_YEAR, caps=("below 2048-bit",),
              why="row 9: DHE with the 1024-bit RFC 2409 group (ECDHE preferred) -> kx 80 -> B"),
        entry("b_incomplete_chain", grade="B", grade_ignoring_trust="B", score=(100, 90, 90, 93),
              hsts=HSTS_ONE_YEAR, send_chain=False, caps=("intermediate",),
              why="row 1 but the intermediate is not sent; the leaf's AIA caIssuers URL (this fixture's HTTP "
                 "port) serves it, so an AIA-fetching client completes the chain -> B, not T"),
        entry("c_tls10_only", grade="C", grade_ignoring_trust="C", score=(90, 90, 90, 90), protocols=("TLSv1",),
              ciphers=ECDHE_RSA_CBC_SHA1, seclevel=0, caps=("tls 1.2", "tls 1.0"), warnings=("tls 1.3",),
              why="TLS 1.0 only, ECDHE CBC: no TLS 1.2 -> C"),
        entry("c_tls10_tls11", grade="C", grade_ignoring_trust="C", score=(92, 90, 90, 90),
              protocols=("TLSv1", "TLSv1.1"), ciphers=ECDHE_RSA_CBC_SHA1, seclevel=0,
              caps=("tls 1.2", "tls 1.0", "tls 1.1"), warnings=("tls 1.3",),
              why="row 5: TLS 1.0+1.1, ECDHE CBC: no TLS 1.2 -> C"),
        entry("t_expired", grade="T", grade_ignoring_trust="A+", score=(100, 90, 90, 93), hsts=HSTS_ONE_YEAR,
              leaf="expired", trust=("expired",), why="row 11a: leaf valid 2020-01-01..2021-01-01 -> T"),
        entry("t_self_signed", grade="T", grade_ignoring_trust="A+", score=(100, 90, 90, 93), hsts=HSTS_ONE_YEAR,
              leaf="self_signed", trust=("self-signed",),
              why="row 11b: self-signed leaf (CA:FALSE, issuer = subject) -> T"),
        entry("m_wrong_name", grade="M", grade_ignoring_trust="A+", score=(100, 90, 90, 93), hsts=HSTS_ONE_YEAR,
              leaf="wrong_name", trust=("does not cover",),
              why="row 12: trusted chain, SAN only www.example.org, scanned as localhost -> M"),
        entry("f_null_cipher", grade="F", grade_ignoring_trust="F", score=(100, 90, 50, 77),
              ciphers=ECDHE_RSA_AEAD + ("ECDHE-RSA-NULL-SHA",), seclevel=0, caps=("112",),
              why="row 1 plus a NULL-encryption suite: cipher (100+0)/2 = 50 scores B, but < 112-bit suites cap F"),
        entry("f_anon_ecdh", grade="F", grade_ignoring_trust="F", score=(100, 0, 90, 0),
              ciphers=ECDHE_RSA_AEAD + ("AECDH-AES128-SHA",), seclevel=0, caps=("anonymous",),
              why="row 1 plus anonymous ECDH (no authentication): key exchange 0 -> total 0 -> F"),
        entry("load_session_cache", grade="A", grade_ignoring_trust="A", score=(100, 90, 90, 93), role="load",
              extra=("ssl_session_cache shared:tls_lab_cache:1m;", "ssl_session_tickets on;"),
              why="load tests: row 2a with a shared session cache and tickets (resumption works)"),
        entry("load_no_resumption", grade="A", grade_ignoring_trust="A", score=(100, 90, 90, 93), role="load",
              extra=("ssl_session_cache off;", "ssl_session_tickets off;"),
              why="load tests: row 2a with session cache and tickets off (every handshake is full)"),
        entry("load_tls12_no_resumption", grade="A-", grade_ignoring_trust="A-", score=(100, 90, 90, 93), role="load",
              protocols=("TLSv1.2",), warnings=("tls 1.3",),
              extra=("ssl_session_cache off;", "ssl_session_tickets off;"),
              why="load tests: TLS 1.2 only, session cache and tickets off: full TLS 1.2 handshakes for a client "
                  "that cannot pin the version (h2load 1.52) and resumes whatever the server allows"),
    ]
)


def nginx_available(path: Path = NGINX) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def require_nginx(path: Path = NGINX) -> None:
    """Fail (not skip) loudly: a lab that silently skips would hide every TLS test."""
    if not nginx_available(path):
        pytest.fail(f"nginx not found at {path}: the TLS lab needs Debian's nginx-light. "
                    "Run `make test` (it installs it), or `apt-get install nginx-light`.", pytrace=False)


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports free now. Under xdist each worker draws from its own range below
    the kernel's ephemeral ones: two workers starting their labs at once got the same port from bind(0)
    (one lab's nginx then exited, ~13 % of the runs with two labs of 60 ports)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or not worker[2:].isdigit():
        return kernel_ports(count)
    low = PORT_RANGE_START + int(worker[2:]) * PORT_RANGE_SIZE
    candidates = random.sample(range(low, low + PORT_RANGE_SIZE), PORT_RANGE_SIZE)
    chosen = [port for port in candidates if bindable(port)][:count]
    return chosen if len(chosen) == count else kernel_ports(count)


PORT_RANGE_START, PORT_RANGE_SIZE = 20_000, 3_000   # gw0: 20000-22999, gw1: 23000-25999, ... below 32768


def bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((IP, port))
        except OSError:
            return False
    return True


def kernel_ports(count: int) -> list[int]:
    """Ask the kernel for `count` distinct free loopback ports (all held open until chosen)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind((IP, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def issue_leaf_for(pki: TestPki, spec: ServerSpec, aia_url: str):
    """Issue the leaf `spec.leaf` asks for, named after the fixture."""
    if spec.leaf == "expired":
        return pki.issue_leaf(spec.name, key=spec.key, not_before=EXPIRED_WINDOW[0], not_after=EXPIRED_WINDOW[1])
    if spec.leaf == "self_signed":
        return pki.issue_leaf(spec.name, key=spec.key, self_signed=True)
    if spec.leaf == "wrong_name":
        return pki.issue_leaf(spec.name, key=spec.key, dns_names=("www.example.org",), ip_addresses=())
    return pki.issue_leaf(spec.name, key=spec.key, aia_url=None if spec.send_chain else aia_url)


def tls_directives(spec: ServerSpec, leaf, dh_files: dict[str, Path]) -> list[str]:
    cipher_list = ":".join(spec.ciphers) or "HIGH"  # TLS 1.3-only: the list is irrelevant
    if spec.seclevel is not None:
        cipher_list += f":@SECLEVEL={spec.seclevel}"
    lines = [
        f"ssl_certificate {leaf.fullchain if spec.send_chain else leaf.cert};",
        f"ssl_certificate_key {leaf.key};",
        f"ssl_protocols {' '.join(spec.protocols)};",
        f'ssl_ciphers "{cipher_list}";',
        "ssl_prefer_server_ciphers on;",
    ]
    if spec.dh_group:
        lines.append(f"ssl_dhparam {dh_files[spec.dh_group]};")
    if spec.ecdh_curve:
        lines.append(f"ssl_ecdh_curve {spec.ecdh_curve};")
    if spec.hsts is not None:
        lines.append(f'add_header Strict-Transport-Security "{spec.hsts}" always;')
    return lines + list(spec.extra)


def page_html(name: str) -> str:
    return (f"<!doctype html><html><head><title>tls-lab {name}</title></head>"
            f"<body><h1>{name}</h1><p>TLS Audit test server.</p></body></html>\\n")


def server_blocks(spec: ServerSpec, port: int, http_port: int, tls_lines: list[str], run_dir: Path) -> str:
    """The HTTPS block (200 page at /) and the plain-HTTP block (redirect, /health, the AIA issuer file)."""
    logs = run_dir / "logs"
    tls = "\n        ".join(tls_lines)
    return f"""
    server {{
        listen {IP}:{port} ssl;
        server_name {HOSTNAME};
        access_log {logs / spec.name}.access.log tls_lab;
        {tls}
        location / {{
            default_type text/html;
            return 200 "{page_html(spec.name)}";
        }}
    }}
    server {{
        listen {IP}:{http_port};
        server_name {HOSTNAME};
        access_log {logs / spec.name}.http.log tls_lab;
        location = /ca/intermediate.der {{
            default_type application/pkix-cert;
            alias {run_dir / "pki" / "intermediate.der"};
        }}
        location = /health {{
            default_type text/plain;
            return 200 "ok\\n";
        }}
        location / {{
            return 301 https://{HOSTNAME}:{port}$request_uri;
        }}
    }}
"""


def nginx_conf(run_dir: Path, blocks: list[str], workers: int) -> str:
    temp = run_dir / "temp"
    log_format = " ".join(f"${f}" if f != "request" else '"$request"' for f in LOG_FIELDS)
    return f"""# Generated by tests/support/tls_servers.py; one server pair per fixture.
daemon off;
worker_processes {workers};
pid {run_dir / "nginx.pid"};
error_log {run_dir / "error.log"} notice;
events {{ worker_connections 1024; }}
http {{
    log_format tls_lab '{log_format}';
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    keepalive_timeout 30s;
{"".join(blocks)}
}}
"""


def port_is_open(port: int) -> bool:
    try:
        with socket.create_connection((IP, port), timeout=0.2):
            return True
    except OSError:
        return False


class TlsLab:
    """A running nginx serving every fixture (or the `specs` it was started with); see the module docstring."""

    def __init__(self, run_dir: Path, pki: TestPki, ports: dict[str, tuple[int, int]], process: subprocess.Popen,
                 specs: dict[str, ServerSpec] | None = None):
        self.directory = run_dir
        self.pki = pki
        self.ca_file = pki.ca_file
        self.error_log = run_dir / "error.log"
        self.process = process
        self._ports = ports
        self.specs = FIXTURES if specs is None else specs

    def names(self, role: str | None = None) -> list[str]:
        return [n for n, s in self.specs.items() if role is None or s.role == role]

    def spec(self, name: str) -> ServerSpec:
        return self.specs[name]

    def port(self, name: str) -> int:
        return self._ports[name][0]

    def http_port(self, name: str) -> int:
        return self._ports[name][1]

    def url(self, name: str) -> str:
        return f"https://{HOSTNAME}:{self.port(name)}/"

    def http_url(self, name: str) -> str:
        return f"http://{HOSTNAME}:{self.http_port(name)}/"

    def access_log(self, name: str) -> Path:
        return self.directory / "logs" / f"{name}.access.log"

    def read_access_log(self, name: str) -> list[dict[str, str]]:
        """Parse the HTTPS access log of `name` into dicts keyed by LOG_FIELDS."""
        rows = []
        for line in self.access_log(name).read_text().splitlines():
            head, _, request = line.partition(' "')
            rows.append(dict(zip(LOG_FIELDS, head.split(" ") + [request.rstrip('"')])))
        return rows

    def all_ports(self) -> list[int]:
        return [p for pair in self._ports.values() for p in pair]

    def stop(self) -> None:
        """Fast-shutdown nginx (SIGTERM: the master reaps its workers before it exits)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def assert_stopped(self) -> None:
        assert self.process.poll() is not None, "nginx master still running"
        still_open = [p for p in self.all_ports() if port_is_open(p)]
        assert not still_open, f"ports still accepting after nginx stopped: {still_open}"

    def __enter__(self) -> TlsLab:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def write_config(run_dir: Path, pki: TestPki, ports: dict[str, tuple[int, int]], workers: int,
                 specs: dict[str, ServerSpec] | None = None) -> Path:
    """One server pair per entry of `specs` (default: FIXTURES), keyed like `ports`."""
    dh_files = {g: write_dh_params(run_dir / "pki", g) for g in ("dh1024", "dh2048")}
    blocks = []
    for name, spec in (FIXTURES if specs is None else specs).items():
        port, http_port = ports[name]
        leaf = issue_leaf_for(pki, spec, aia_url=f"http://{IP}:{http_port}/ca/intermediate.der")
        blocks.append(server_blocks(spec, port, http_port, tls_directives(spec, leaf, dh_files), run_dir))
    return write_file(run_dir / "nginx.conf", nginx_conf(run_dir, blocks, workers).encode())


def wait_for_ports(process: subprocess.Popen, ports: list[int], error_log: Path, timeout: float,
                   log_from: int = 0) -> None:
    """Until nginx listens on every port. A port another process holds is open too: nginx's own
    "bind() ... failed" in its log (it retries for 2.5 s, then exits) is what tells them apart."""
    deadline = time.monotonic() + timeout
    pending = list(ports)
    while pending:
        if process.poll() is not None:
            raise RuntimeError(f"nginx exited with {process.returncode}:\n{read_tail(error_log)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"nginx ports {pending} not accepting after {timeout}s:\n{read_tail(error_log)}")
        pending = [p for p in pending if not port_is_open(p)]
        if pending:
            time.sleep(0.02)
    if bind_failed(error_log, log_from):
        raise RuntimeError(f"a port of nginx's was taken by another process:\n{read_tail(error_log)}")


def bind_failed(error_log: Path, log_from: int) -> bool:
    if not error_log.exists():
        return False
    with error_log.open("rb") as log:
        log.seek(log_from)
        return b"bind() to" in log.read()


def log_size(error_log: Path) -> int:
    return error_log.stat().st_size if error_log.exists() else 0


def read_tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text().splitlines()[-lines:]) if path.exists() else "(no error log)"


def launch_nginx(run_dir: Path, conf: Path) -> subprocess.Popen:
    """Start nginx in the foreground; the temp dirs must exist first (nginx only creates the last level)."""
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (run_dir / "temp" / sub).mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [str(NGINX), "-p", str(run_dir), "-c", str(conf), "-e", str(run_dir / "error.log")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=die_with_parent,
    )


def die_with_parent() -> None:
    """In the child before exec: ask Linux to SIGTERM nginx if the test process dies without teardown."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start_lab(directory: Path | None = None, workers: int = 1, attempts: int = 3,
              specs: dict[str, ServerSpec] | None = None) -> TlsLab:
    """Generate the PKI, write one nginx.conf, start nginx and wait until every port accepts.

    `specs` (name -> ServerSpec, each `spec.name` unique: it names the leaf and log files) serves
    those servers instead of FIXTURES, e.g. changed copies of fixtures.
    Ports are picked free by the kernel; if another process grabs one before nginx binds it,
    nginx exits and we retry with fresh ports.
    """
    specs = FIXTURES if specs is None else specs
    # 0755: when run as root, nginx workers run as "nobody" and must reach the AIA file.
    run_dir = Path(directory or tempfile.mkdtemp(prefix="tls-lab-"))
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    run_dir.chmod(0o755)
    pki = TestPki(run_dir / "pki")
    (run_dir / "pki").chmod(0o755)
    for attempt in range(1, attempts + 1):
        flat = free_ports(2 * len(specs))
        ports = {name: (flat[2 * i], flat[2 * i + 1]) for i, name in enumerate(specs)}
        conf = write_config(run_dir, pki, ports, workers, specs)
        log_from = log_size(run_dir / "error.log")
        process = launch_nginx(run_dir, conf)
        try:
            wait_for_ports(process, flat, run_dir / "error.log", timeout=10, log_from=log_from)
            return TlsLab(run_dir, pki, ports, process, specs)
        except RuntimeError:
            process.kill()
            process.wait()
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


# The session's lab once started: tests/conftest.py checks after every test that it is still up.
SESSION_LABS: list[TlsLab] = []


@pytest.fixture(scope="session")
def tls_lab():
    """Session-wide lab of nginx TLS servers; stopped (and checked gone) at the end of the session."""
    require_nginx()
    lab = start_lab()
    SESSION_LABS.append(lab)
    try:
        yield lab
    finally:
        SESSION_LABS.remove(lab)
        lab.stop()
        lab.assert_stopped()
        shutil.rmtree(lab.directory, ignore_errors=True)


def lab_death(lab: TlsLab) -> str | None:
    """None while the lab's nginx runs; else how it ended, in nginx's own words (its notice-level log
    names the signal and the sender's pid), and the lab is started again on the same ports so that
    one test's accident is reported once, by that test, instead of failing every later one."""
    code = lab.process.poll()
    if code is None:
        return None
    tail = read_tail(lab.error_log, 15)
    log_from = log_size(lab.error_log)
    lab.process = launch_nginx(lab.directory, lab.directory / "nginx.conf")
    wait_for_ports(lab.process, lab.all_ports(), lab.error_log, timeout=10, log_from=log_from)
    return f"the session's TLS lab (nginx) exited with {code} during this test; its log ends:\n{tail}"


def lab_summary(lab: TlsLab) -> str:
    """One line per fixture, for humans running the lab by hand."""
    return "\n".join(
        f"{name:26} https {lab.port(name):5} http {lab.http_port(name):5}  {s.grade:2}  {s.why}"
        for name, s in lab.specs.items()
    )


def main() -> None:
    """`python -m tests.support.tls_servers`: run the lab until Ctrl-C (for manual openssl/sslyze runs)."""
    started = time.monotonic()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` cleans up like Ctrl-C
    with start_lab() as lab:
        print(f"tls lab up in {time.monotonic() - started:.2f}s, CA file {lab.ca_file}, dir {lab.directory}")
        print(lab_summary(lab))
        try:
            lab.process.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()

