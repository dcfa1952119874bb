"""Issue #28: the real clients installed here against every lab server, compared with the simulated rows.

The client simulation (workers/tls/clients.py) replays each client's recorded ClientHello and then applies
the limits the real client enforces once it sees the certificates (tlsaudit/domain/client_limits.py). The
replay can only be as right as the recording and the limits: this test runs the real programs (Chromium,
Firefox ESR, curl with OpenSSL 3.0, gnutls-cli 3.7 and this venv's Python `ssl`) against each lab server,
reads from nginx's access log what each one actually negotiated, and fails with a table of every pair
(server x client) where the real outcome and the row the product shows differ: the protocol (or that the
handshake fails), and, when both succeed, the suite.

Only the graded servers whose chain a client trusts are used: expired, self-signed, wrong-name and
chain-less leaves make the real clients stop on trust, which the simulation does not model (the trust
findings report that apart), so there a "fails" would say nothing about the handshake.

nginx logs a request only after a completed handshake, so each client's request carries its name and a
token of this run: no line for it means the client did not complete a handshake with that server.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import uuid
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.tls_servers import FIXTURES, HOSTNAME, IP
from workers.tls.engine import run_scan

pytestmark = [pytest.mark.browser, pytest.mark.slow]   # it starts Chromium and Firefox, ~15 scans

CLIENTS = ("chromium", "firefox", "curl", "gnutls", "python")
# Trust failures are not what the simulation models (see the module docstring).
SERVERS = [name for name, spec in FIXTURES.items() if spec.role == "grade" and spec.trusted]
CHROMIUM = "/usr/bin/chromium"
FIREFOX = "/usr/bin/firefox-esr"
CLIENT_TIMEOUT = 15          # seconds for one command-line handshake and request
BROWSER_TIMEOUT = 120        # one browser loading every server, on a busy 2-core machine
# nginx's $ssl_protocol says "TLSv1" where the product says "TLSv1.0".
PROTOCOL_NAMES = {"TLSv1": "TLSv1.0"}
# A fresh Firefox profile would reach out to the Internet on start (captive-portal and connectivity
# checks, telemetry, remote settings, Safe Browsing lists): nothing of it touches TLS to the lab.
FIREFOX_PREFS = {"network.captive-portal-service.enabled": False, "network.connectivity-service.enabled": False,
                 "toolkit.telemetry.enabled": False, "datareporting.policy.dataSubmissionEnabled": False,
                 "browser.safebrowsing.update.enabled": False, "services.settings.server": "http://127.0.0.1:9/",
                 "browser.shell.checkDefaultBrowser": False}


@dataclass(frozen=True)
class Outcome:
    protocol: str | None      # None: no handshake
    suite: str | None         # IANA name
    error: str = ""           # why it failed, in the client's (or the simulation's) words

    def __str__(self) -> str:
        return "fails" if self.protocol is None else f"{self.protocol} {self.suite}"

    def agrees_with(self, other: Outcome) -> bool:
        return self.protocol == other.protocol and (self.protocol is None or self.suite == other.suite)


@dataclass(frozen=True)
class Run:
    """One test run's requests: a token tells them from anything else the session's lab logged."""
    lab: object
    token: str
    work: Path

    def url(self, server: str, client: str) -> str:
        return f"https://{HOSTNAME}:{self.lab.port(server)}/?client={client}&run={self.token}"

    def request(self, client: str) -> bytes:
        return f"GET /?client={client}&run={self.token} HTTP/1.0\r\nHost: {HOSTNAME}\r\n\r\n".encode()


# -- the real clients ---------------------------------------------------------------------------------------

def run_curl(run: Run, server: str) -> str:
    """curl's own error (its first line), or "" when it got a response."""
    port = run.lab.port(server)
    done = subprocess.run(["curl", "-sS", "-o", "/dev/null", "--max-time", str(CLIENT_TIMEOUT),
                           "--cacert", str(run.lab.ca_file), "--resolve", f"{HOSTNAME}:{port}:{IP}",
                           run.url(server, "curl")], capture_output=True, text=True, timeout=CLIENT_TIMEOUT + 5)
    return (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0] if done.returncode else ""


def run_gnutls(run: Run, server: str) -> str:
    """gnutls-cli's verdict lines ("- Status: ...", "*** ..."), or "" when it got a response."""
    done = subprocess.run(["gnutls-cli", "--x509cafile", str(run.lab.ca_file), "-p", str(run.lab.port(server)),
                           HOSTNAME], input=run.request("gnutls"), capture_output=True, timeout=CLIENT_TIMEOUT)
    if done.returncode == 0:
        return ""
    lines = (done.stdout + done.stderr).decode(errors="replace").splitlines() or [f"exit {done.returncode}"]
    return "; ".join(line.strip() for line in lines if line.startswith(("*** ", "- Status:"))) or lines[-1]


def run_python(run: Run, server: str) -> str:
    """This venv's `ssl` as an application uses it: the default context, trusting the lab's CA."""
    context = ssl.create_default_context(cafile=str(run.lab.ca_file))
    try:
        with socket.create_connection((IP, run.lab.port(server)), timeout=CLIENT_TIMEOUT) as raw, \
                context.wrap_socket(raw, server_hostname=HOSTNAME) as tls:
            tls.sendall(run.request("python"))
            while tls.recv(4096):
                pass
    except (OSError, ssl.SSLError) as exc:
        return str(exc)
    return ""


def iframe_page(run: Run, client: str) -> Path:
    """One page framing every server: one browser start loads them all (each server has its own port,
    so kept-alive connections cannot mix them up)."""
    frames = "".join(f'<iframe src="{run.url(server, client)}"></iframe>' for server in SERVERS)
    page = run.work / f"{client}.html"
    page.write_text(f"<!doctype html><html><body>{frames}</body></html>")
    return page


def trusting_nss_db(db: Path, ca_file: Path) -> None:
    """An NSS database trusting the lab's root as a TLS server CA, as workers/browser/chromium.py does."""
    db.mkdir(parents=True, exist_ok=True)
    subprocess.run(["certutil", "-N", "-d", f"sql:{db}", "--empty-password"], check=True, capture_output=True)
    subprocess.run(["certutil", "-A", "-d", f"sql:{db}", "-t", "C,,", "-n", "tls-lab-ca", "-i", str(ca_file)],
                   check=True, capture_output=True)


def browser_env(home: Path) -> dict:
    """A private HOME: Chromium reads its trust anchors from $HOME/.pki/nssdb, and neither browser may
    touch the real user's files."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"), "LANG": "C.UTF-8"}


def run_chromium(run: Run) -> None:
    home = run.work / "chromium-home"
    trusting_nss_db(home / ".pki" / "nssdb", run.lab.ca_file)
    # --virtual-time-budget: --dump-dom waits until the frames are loaded (or have failed).
    command = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
               f"--user-data-dir={home / 'profile'}", "--virtual-time-budget=20000", "--dump-dom",
               iframe_page(run, "chromium").as_uri()]
    run_browser("Chromium", command, home)


def run_firefox(run: Run) -> None:
    home, profile = run.work / "firefox-home", run.work / "firefox-profile"
    trusting_nss_db(profile, run.lab.ca_file)     # a profile directory is Firefox's NSS database
    (profile / "user.js").write_text("".join(f'user_pref("{key}", {firefox_value(value)});\n'
                                             for key, value in FIREFOX_PREFS.items()))
    # --screenshot exits once the page has loaded, frames included.
    command = [FIREFOX, "--headless", "--no-remote", "--profile", str(profile),
               "--screenshot", str(run.work / "firefox.png"), iframe_page(run, "firefox").as_uri()]
    run_browser("Firefox", command, home)


def firefox_value(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else f'"{value}"'


def run_browser(name: str, command: list[str], home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(command, env=browser_env(home), capture_output=True, text=True, timeout=BROWSER_TIMEOUT)
    assert done.returncode == 0, f"{name} exited with {done.returncode}:\n{done.stderr[-3000:]}"


# -- what happened, and what the product says ---------------------------------------------------------------

@cache
def iana_names() -> dict[str, str]:
    """OpenSSL's suite names (nginx's $ssl_cipher) -> IANA names, from OpenSSL itself (TLS 1.3: the same)."""
    listing = subprocess.run(["openssl", "ciphers", "-stdname", "ALL:COMPLEMENTOFALL:@SECLEVEL=0"],
                             capture_output=True, text=True, check=True).stdout
    return {parts[2]: parts[0] for parts in (line.split() for line in listing.splitlines()) if len(parts) > 3}


def logged(run: Run, server: str, client: str) -> Outcome | None:
    """What nginx logged for this run's request of `client`, or None: no completed handshake."""
    for row in run.lab.read_access_log(server):
        parts = row["request"].split(" ")
        if len(parts) < 2:      # another test's connection that sent no request line (nginx logs a 400 with "")
            continue
        query = parse_qs(urlsplit(parts[1]).query)
        if query.get("client") == [client] and query.get("run") == [run.token]:
            protocol = PROTOCOL_NAMES.get(row["ssl_protocol"], row["ssl_protocol"])
            return Outcome(protocol, iana_names().get(row["ssl_cipher"], row["ssl_cipher"]))
    return None


def real_outcomes(run: Run) -> dict[tuple[str, str], Outcome]:
    errors = {}
    for server in SERVERS:
        for client, connect in (("curl", run_curl), ("gnutls", run_gnutls), ("python", run_python)):
            errors[server, client] = connect(run, server)
    run_chromium(run)
    run_firefox(run)
    outcomes = {}
    for server in SERVERS:
        for client in CLIENTS:
            found = logged(run, server, client)
            why = errors.get((server, client)) or "no request reached nginx"
            outcomes[server, client] = found or Outcome(None, None, why)
    return outcomes


def simulated_outcomes(lab) -> dict[tuple[str, str], Outcome]:
    """The rows as the product shows them: the engine's replay, then each client's limits on the
    certificates the same scan found."""
    outcomes = {}
    for server in SERVERS:
        scan = run_scan(HOSTNAME, lab.port(server), ip=IP, ca_file=str(lab.ca_file), allow_private=True,
                        network_timeout=3, max_retries=1)
        assert scan.error is None, f"{server}: {scan.error}"
        rows = {row.client: row for row in scan.facts.client_simulation}
        for client in CLIENTS:
            row = rows[client]
            outcomes[server, client] = Outcome(row.protocol, row.suite, row.error)
    return outcomes


def table(pairs: list[tuple[str, str]], real: dict, simulated: dict) -> str:
    head = ("server", "client", "real", "simulated", "real error", "simulated error")
    lines = [head] + [(server, client, str(real[server, client]), str(simulated[server, client]),
                       real[server, client].error, simulated[server, client].error) for server, client in pairs]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head) - 1)] + [0]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines)


def test_the_lab_has_the_servers_this_comparison_needs():
    """The comparison is only as telling as the servers: old protocols, weak keys, no FS, no AEAD..."""
    assert {"c_tls10_only", "c_tls10_tls11", "b_rsa1024", "b_dh1024", "b_no_forward_secrecy", "b_cbc_only",
            "f_null_cipher", "f_anon_ecdh", "a_plus_ecdsa_tls13_hsts", "a_minus_tls12_only"} <= set(SERVERS)
    assert not {"t_expired", "t_self_signed", "m_wrong_name", "b_incomplete_chain"} & set(SERVERS)
    for program in ("curl", "gnutls-cli", "certutil", "openssl", CHROMIUM, FIREFOX):
        assert shutil.which(program), f"{program} is needed: the real clients run here"


def test_every_real_client_ends_each_lab_handshake_as_its_simulated_row(tls_lab, tmp_path):
    run = Run(tls_lab, uuid.uuid4().hex[:12], tmp_path)
    real = real_outcomes(run)
    for client in ("chromium", "firefox"):       # a browser that loaded nothing is the harness failing
        assert any(real[server, client].protocol for server in SERVERS), f"{client} completed no handshake"
    simulated = simulated_outcomes(tls_lab)
    pairs = [(server, client) for server in SERVERS for client in CLIENTS]
    print(table(pairs, real, simulated))
    mismatches = [pair for pair in pairs if not real[pair].agrees_with(simulated[pair])]
    assert not mismatches, ("the real clients and the simulated rows differ:\n"
                            + table(mismatches, real, simulated))
