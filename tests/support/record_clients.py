"""Record the ClientHello of each real client that runs here (curl, Python, Node, Java, Chromium)
into tlsaudit/domain/data/client_profiles.json, for client handshake simulation.

    .venv/bin/python -m tests.support.record_clients

Each client connects to a listener on 127.0.0.1 that reads its first TLS record and hangs up.
Only 127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

from workers.tls.hello import parse_client_hello

OUT = Path(__file__).resolve().parents[2] / "tlsaudit" / "domain" / "data" / "client_profiles.json"
# Short names for the report; update them with the versions when re-recording.
LABELS = {"chromium": "Chromium 156 (Debian 12)", "curl": "curl 7.88 / OpenSSL 3.0", "python": "Python 3.11 / OpenSSL 3.0",
          "node": "Node.js 20", "java": "Java 17 (OpenJDK)"}
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


def clients(workdir: Path) -> dict:
    (workdir / "Hello.java").write_text(JAVA_CLIENT)
    python_client = ("import socket,ssl,sys; c=ssl.create_default_context(); c.check_hostname=False; "
                     "c.verify_mode=ssl.CERT_NONE; s=socket.create_connection(('127.0.0.1',int(sys.argv[1]))); "
                     "c.wrap_socket(s,server_hostname='localhost')")
    node_client = ("require('tls').connect({host:'127.0.0.1',port:+process.argv[1],servername:'localhost',"
                   "rejectUnauthorized:false}).on('error',()=>{})")
    return {  # the report lists clients in this order
        "chromium": (lambda p: ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                f"--user-data-dir={workdir / 'chromium'}", f"https://localhost:{p}/"],
                     ["chromium", "--version"]),
        "curl": (lambda p: ["curl", "-sk", "--max-time", "10", f"https://localhost:{p}/"], ["curl", "--version"]),
        "java": (lambda p: ["java", str(workdir / "Hello.java"), str(p)], ["java", "-version"]),
        "node": (lambda p: ["node", "-e", node_client, str(p)], ["node", "--version"]),
        "python": (lambda p: [sys.executable, "-c", python_client, str(p)],
                   [sys.executable, "-c", "import ssl,sys; print('Python', sys.version.split()[0], ssl.OPENSSL_VERSION)"]),
    }


def main() -> None:
    profiles = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (command, version_command) in clients(Path(tmp)).items():
            record = capture(command)
            profiles[name] = {"label": LABELS[name], "client": version_of(version_command), "source": f"recorded here on {date.today()}",
                              "client_hello": record.hex(), **parse_client_hello(record)}
            print(name, profiles[name]["client"], len(record), "bytes")
    OUT.write_text(json.dumps(profiles, indent=1) + "\n")


if __name__ == "__main__":
    main()
