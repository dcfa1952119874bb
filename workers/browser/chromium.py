"""Debian's Chromium under Playwright: one browser per worker process, relaunched only when a probe
needs a different trusted CA or host pinning (both are launch-time settings in Chromium).

Trusting a custom CA for real: Chromium on Linux reads user trust anchors from the NSS database in
$HOME/.pki/nssdb. Each browser gets a private temporary HOME whose NSS DB holds the organization's
CA certificates (`certutil -A -t C,,`), so chains are validated as usual (names, dates, chain) and
responses are cached like on any trusted site; `ignore_https_errors` would leave every response
uncacheable and ruin the warm loads.

Every process of a browser carries a marker in its environment, so `close()` can prove (and enforce,
by pid) that none is left running.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

from tlsaudit.domain import customca
from workers.browser.errors import BROWSER, CUSTOM_CA
from workers.net.errors import TargetError

CHROMIUM = os.environ.get("TLSAUDIT_CHROMIUM", "/usr/bin/chromium")
CERTUTIL = "certutil"
MARKER = "TLSAUDIT_PROBE_BROWSER"
CHROMIUM_ARGS = (
    "--no-sandbox",  # required as root
    "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-domain-reliability", "--metrics-recording-only",
    # HTTP/3 would make warm loads switch protocol after Alt-Svc; we compare TLS over TCP.
    "--disable-quic",
    # WebRTC's UDP (STUN, TURN, ICE checks, mDNS) would go around the guarded probe's SOCKS proxy: no UDP
    # at all, TCP through the context's proxy. Chrome maps this switch to the webrtc.ip_handling_policy
    # pref; the --force-webrtc-... spelling used before is not in Chromium 156 and did nothing.
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    # HttpsUpgrades would silently turn the http:// variant into https:// on port 80 sites.
    # IsolateSandboxedIframes puts a sandboxed srcdoc frame in its own process, where NO_WEBRTC_SCRIPT
    # is not installed before the frame's scripts run.
    "--disable-features=OptimizationHints,MediaRouter,Translate,NetworkTimeServiceQuerying,"
    "HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,IsolateSandboxedIframes",
)
# Added to every context: runs before any script of every document (frames, about:blank children,
# popups). Removes every WebRTC interface, so a probed page behaves as in a browser without WebRTC.
# Workers never have RTCPeerConnection; the launch flag above covers whatever this cannot reach.
NO_WEBRTC_SCRIPT = """(() => {
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    if (/^(webkit)?RTC/.test(name)) delete globalThis[name];
  }
})();"""
PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)


def resolver_rules(ip_map: dict[str, str]) -> str:
    """`MAP host ip` rules for --host-resolver-rules (IPv6 addresses in brackets)."""
    return ", ".join(f"MAP {host} {f'[{ip}]' if ':' in ip else ip}" for host, ip in sorted(ip_map.items()))


# certutil adds one certificate a run (~20 ms): MAX_CERTIFICATES of them take two seconds or so.
TRUST_STORE_SECONDS = 20.0


def write_nss_db(home: Path, ca_pem: str, budget_s: float = TRUST_STORE_SECONDS) -> None:
    """An NSS DB under home/.pki/nssdb trusting every certificate of `ca_pem` as a TLS server CA,
    built within `budget_s`. A CA saved before the limits existed is refused before any work."""
    certs = PEM_CERT.findall(ca_pem.encode())
    if not certs:
        raise TargetError(BROWSER, "The custom CA file holds no PEM certificate.")
    if problem := customca.too_many(len(certs)):
        raise TargetError(CUSTOM_CA, f"{problem} Fix it under the organization's settings.")
    if shutil.which(CERTUTIL) is None:
        raise TargetError(BROWSER, "certutil (Debian package libnss3-tools) is needed to trust a custom CA.")
    deadline = time.monotonic() + budget_s
    db = home / ".pki" / "nssdb"
    db.mkdir(parents=True)
    certutil("-N", "-d", f"sql:{db}", "--empty-password", deadline=deadline)
    for index, pem in enumerate(certs):
        path = home / f"ca-{index}.pem"
        path.write_bytes(pem + b"\n")
        certutil("-A", "-d", f"sql:{db}", "-t", "C,,", "-n", f"tlsaudit-ca-{index}", "-i", str(path),
                 deadline=deadline)


def certutil(*args: str, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TargetError(BROWSER, "The browser's trust store for the custom CA took too long to build; "
                                   "the probe was not started.")
    try:
        done = subprocess.run([CERTUTIL, *args], capture_output=True, text=True, timeout=left)
    except subprocess.TimeoutExpired:
        raise TargetError(BROWSER, "The browser's trust store for the custom CA took too long to build; "
                                   "the probe was not started.") from None
    if done.returncode != 0:
        raise TargetError(BROWSER, "The custom CA could not be added to the browser's trust store.",
                          (done.stderr or done.stdout).strip())


def parent_pids() -> dict[int, int]:
    """pid -> parent pid for every process we can read."""
    table = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            table[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])  # "pid (comm) state ppid"
    return table


def marked_pids(token: str) -> list[int]:
    """This browser's processes: those carrying the marker (the browser, most helpers) and their
    descendants (Chromium's zygotes start with a cleaned environment, their children inherit that)."""
    needle = f"{MARKER}={token}".encode()
    parents = parent_pids()
    marked = set()
    for pid in parents:
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                marked.add(pid)
        except OSError:
            continue
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = set(), list(marked)
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack.extend(children.get(pid, []))
    return sorted(found)


_local = threading.local()


def acquire_playwright():
    """The thread's Playwright driver, started on first use: the sync API allows one per thread."""
    from playwright.sync_api import sync_playwright

    if getattr(_local, "users", 0) == 0:
        _local.playwright = sync_playwright().start()
    _local.users = getattr(_local, "users", 0) + 1
    return _local.playwright


def release_playwright() -> None:
    _local.users -= 1
    if _local.users == 0:
        playwright, _local.playwright = _local.playwright, None
        playwright.stop()


class ProbeBrowser:
    """A launched Chromium with a CA set and host pins; `ensure()` relaunches it when they must change."""

    def __init__(self, ca_pem: str | None = None, ip_map: dict[str, str] | None = None):
        self._playwright = None
        self.browser = None
        self.start(ca_pem, ip_map)

    def start(self, ca_pem: str | None, ip_map: dict[str, str] | None) -> None:
        self.ca_pem = ca_pem or None
        self.ip_map = dict(ip_map or {})
        self.token = uuid.uuid4().hex
        self.home = Path(tempfile.mkdtemp(prefix="tlsaudit-chromium-"))
        try:
            self._launch()
        except BaseException:
            self.close()
            raise

    def _launch(self) -> None:
        from playwright.sync_api import Error

        if self.ca_pem:
            write_nss_db(self.home, self.ca_pem)
        args = list(CHROMIUM_ARGS)
        if self.ip_map:
            args.append(f"--host-resolver-rules={resolver_rules(self.ip_map)}")
        env = {**os.environ, "HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config"),
               "XDG_CACHE_HOME": str(self.home / ".cache"), MARKER: self.token}
        self._playwright = acquire_playwright()
        try:
            self.browser = self._playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args,
                                                            env=env, timeout=60_000)
        except Error as exc:
            raise TargetError(BROWSER, f"Chromium could not be started ({CHROMIUM}).", str(exc)) from exc

    @property
    def version(self) -> str:
        return self.browser.version if self.browser else ""

    def satisfies(self, ca_pem: str | None, ip_map: dict[str, str]) -> bool:
        return (self.browser is not None and self.browser.is_connected() and (ca_pem or None) == self.ca_pem
                and all(self.ip_map.get(h) == ip for h, ip in ip_map.items()))

    def ensure(self, ca_pem: str | None, ip_map: dict[str, str]) -> ProbeBrowser:
        """This browser if it already trusts `ca_pem` and pins `ip_map`, else relaunch with them."""
        if not self.satisfies(ca_pem, ip_map):
            self.close()
            self.start(ca_pem, ip_map)
        return self

    def new_context(self, proxy: dict | None = None):
        """A fresh context (empty cache, no connections, no WebRTC); `proxy`: Playwright's proxy settings."""
        context = self.browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US", proxy=proxy)
        context.add_init_script(NO_WEBRTC_SCRIPT)
        return context

    def close(self, wait_s: float = 10.0) -> None:
        """Close Chromium and the driver; any of its processes still alive after `wait_s` is killed by pid."""
        pids = marked_pids(self.token)  # before closing: afterwards helpers may be re-parented
        try:
            if self.browser is not None:
                self.browser.close()
        except Exception:  # noqa: BLE001 — a crashed browser must still be reaped below
            pass
        finally:
            self.browser = None
        try:
            if self._playwright is not None:
                release_playwright()
        except Exception:  # noqa: BLE001
            pass
        finally:
            self._playwright = None
        reap(pids, wait_s)
        shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> ProbeBrowser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def reap(pids: list[int], wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
