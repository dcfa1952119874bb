"""Private instances of Debian's mail, file, chat, directory and database daemons on 127.0.0.1, for
the STARTTLS tests (#18 item 3): each runs in the foreground from its own config file in a temp
directory, on free unprivileged ports, with a certificate of our test CA; never the system service.

    cert = TlsFiles(cert=..., chain=..., key=...)        # a leaf of tests/support/pki.TestPki
    with dovecot(directory, cert) as ports:            # {"imap": p, "imaps": p, "pop3": p, "pop3s": p}
        ...

The packages come from .ci/ensure-system (dovecot-imapd dovecot-pop3d vsftpd prosody slapd, and
PostgreSQL's server binaries).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# Protocols and suites each daemon is told to offer, so that tests can compare the audit's findings.
TLS12_SUITES = "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384"
# The same for slapd, which Debian builds with GnuTLS (a priority string, not OpenSSL's list).
GNUTLS_PRIORITY = ("NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM"
                   ":-KX-ALL:+ECDHE-RSA")
TLS12_SUITE_NAMES = {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}


@dataclass(frozen=True)
class TlsFiles:
    cert: Path      # the leaf alone
    chain: Path     # leaf + intermediate
    key: Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_ports(process: subprocess.Popen, ports, log: Path | None = None, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    waiting = list(ports)
    while waiting and time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode}: {_log_tail(process, log)}")
        try:
            socket.create_connection(("127.0.0.1", waiting[0]), timeout=0.5).close()
            waiting.pop(0)
        except OSError:
            time.sleep(0.1)
    if waiting:
        raise RuntimeError(f"{process.args[0]} not listening on {waiting} after {timeout} s: "
                           f"{_log_tail(process, log)}")


def _log_tail(process: subprocess.Popen, log: Path | None) -> str:
    text = log.read_text(errors="replace") if log is not None and log.exists() else ""
    return text[-2000:]


@contextmanager
def running(command: list[str], ports, log: Path, **popen):
    """Start `command` (a daemon in the foreground), wait for its ports, stop it on the way out."""
    with open(log, "ab") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, **popen)
    try:
        wait_for_ports(process, ports, log)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def readable_copy(files: TlsFiles, directory: Path, owner: str) -> TlsFiles:
    """The certificate and key copied where a daemon that drops privileges to `owner` can read them."""
    directory.mkdir(parents=True, exist_ok=True)
    user = pwd.getpwnam(owner)
    os.chown(directory, user.pw_uid, user.pw_gid)
    directory.chmod(0o755)
    copies = {}
    for name in ("cert", "chain", "key"):
        target = directory / Path(getattr(files, name)).name
        shutil.copyfile(getattr(files, name), target)
        os.chown(target, user.pw_uid, user.pw_gid)
        target.chmod(0o600 if name == "key" else 0o644)
        copies[name] = target
    return TlsFiles(**copies)


def open_to_all(path: Path) -> None:
    """pytest's temp directories are 0700: daemons that drop root must be able to walk into theirs."""
    for parent in [path, *path.parents]:
        if parent == Path("/tmp") or parent == Path("/"):
            break
        parent.chmod(parent.stat().st_mode | 0o711)


# --- dovecot: IMAP, IMAPS, POP3, POP3S ----------------------------------------------------------

def dovecot_conf(directory: Path, tls: TlsFiles, ports: dict[str, int]) -> str:
    return f"""
protocols = imap pop3
listen = 127.0.0.1
base_dir = {directory}/run
state_dir = {directory}/state
log_path = {directory}/dovecot.log
ssl = yes
ssl_cert = <{tls.chain}
ssl_key = <{tls.key}
ssl_min_protocol = TLSv1.2
ssl_cipher_list = {TLS12_SUITES}
ssl_prefer_server_ciphers = yes
disable_plaintext_auth = yes
auth_mechanisms = plain
passdb {{
  driver = static
  args = nopassword=y
}}
userdb {{
  driver = static
  args = uid=dovecot gid=dovecot home={directory}/home
}}
mail_location = maildir:{directory}/home/Maildir
service imap-login {{
  inet_listener imap {{
    port = {ports['imap']}
  }}
  inet_listener imaps {{
    port = {ports['imaps']}
    ssl = yes
  }}
}}
service pop3-login {{
  inet_listener pop3 {{
    port = {ports['pop3']}
  }}
  inet_listener pop3s {{
    port = {ports['pop3s']}
    ssl = yes
  }}
}}
service anvil {{
  chroot =
}}
"""


@contextmanager
def dovecot(directory: Path, tls: TlsFiles):
    directory.mkdir(parents=True, exist_ok=True)
    open_to_all(directory)
    for sub in ("run", "state", "home"):
        (directory / sub).mkdir(exist_ok=True)
    ports = {name: free_port() for name in ("imap", "imaps", "pop3", "pop3s")}
    conf = directory / "dovecot.conf"
    conf.write_text(dovecot_conf(directory, tls, ports))
    with running(["/usr/sbin/dovecot", "-F", "-c", str(conf)], ports.values(), directory / "dovecot.log"):
        yield ports


# --- vsftpd: FTP with AUTH TLS ------------------------------------------------------------------

def vsftpd_conf(directory: Path, tls: TlsFiles, port: int) -> str:
    return f"""listen=YES
listen_address=127.0.0.1
listen_port={port}
background=NO
anonymous_enable=NO
local_enable=YES
ssl_enable=YES
allow_anon_ssl=NO
force_local_logins_ssl=YES
ssl_tlsv1=NO
ssl_sslv2=NO
ssl_sslv3=NO
ssl_ciphers={TLS12_SUITES}
rsa_cert_file={tls.chain}
rsa_private_key_file={tls.key}
secure_chroot_dir={directory}/empty
pasv_enable=NO
xferlog_enable=NO
vsftpd_log_file={directory}/vsftpd.log
seccomp_sandbox=NO
"""


@contextmanager
def vsftpd(directory: Path, tls: TlsFiles):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "empty").mkdir(exist_ok=True)
    port = free_port()
    conf = directory / "vsftpd.conf"
    conf.write_text(vsftpd_conf(directory, tls, port))
    with running(["/usr/sbin/vsftpd", str(conf)], [port], directory / "vsftpd.out"):
        yield port


# --- prosody: XMPP with STARTTLS --------------------------------------------------------------

def prosody_conf(directory: Path, tls: TlsFiles, port: int, host: str) -> str:
    return f"""-- a private instance for tests/starttls
run_as_root = true
daemonize = false
pidfile = "{directory}/prosody.pid"
data_path = "{directory}/data"
plugin_paths = {{}}
log = {{ info = "{directory}/prosody.log" }}
interfaces = {{ "127.0.0.1" }}
c2s_ports = {{ {port} }}
c2s_direct_tls_ports = {{}}
s2s_ports = {{}}
component_ports = {{}}
http_ports = {{}}
https_ports = {{}}
modules_enabled = {{ "tls"; "saslauth"; "disco"; "ping" }}
modules_disabled = {{ "s2s"; "http"; "posix" }}
c2s_require_encryption = true
authentication = "internal_hashed"
ssl = {{
  certificate = "{tls.chain}";
  key = "{tls.key}";
  protocol = "tlsv1_2+";
  ciphers = "{TLS12_SUITES}";
}}
VirtualHost "{host}"
"""


@contextmanager
def prosody(directory: Path, tls: TlsFiles, host: str = "localhost"):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "data").mkdir(exist_ok=True)
    port = free_port()
    conf = directory / "prosody.cfg.lua"
    conf.write_text(prosody_conf(directory, tls, port, host))
    with running(["/usr/bin/prosody", "--config", str(conf), "-F"], [port], directory / "prosody.out"):
        yield port


# --- slapd: LDAP with StartTLS, and LDAPS -----------------------------------------------------

def slapd_conf(directory: Path, tls: TlsFiles | None) -> str:
    """`tls` None: a server without a certificate, which answers StartTLS with an error."""
    tls_lines = (f"TLSCertificateFile {tls.chain}\nTLSCertificateKeyFile {tls.key}\nTLSProtocolMin 3.3\n"
                 f"TLSCipherSuite {GNUTLS_PRIORITY}\n") if tls else ""
    return f"""include /etc/ldap/schema/core.schema
pidfile {directory}/slapd.pid
argsfile {directory}/slapd.args
modulepath /usr/lib/ldap
moduleload back_mdb
{tls_lines}database mdb
suffix "dc=tlsaudit,dc=test"
rootdn "cn=admin,dc=tlsaudit,dc=test"
directory {directory}/db
"""


@contextmanager
def slapd(directory: Path, tls: TlsFiles | None):
    """ldap:// (StartTLS) and ldaps:// ports; only ldap:// without `tls`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "db").mkdir(exist_ok=True)
    ports = {"ldap": free_port(), "ldaps": free_port()} if tls else {"ldap": free_port()}
    conf = directory / "slapd.conf"
    conf.write_text(slapd_conf(directory, tls))
    urls = " ".join(f"{scheme}://127.0.0.1:{port}/" for scheme, port in ports.items())
    with running(["/usr/sbin/slapd", "-d", "0", "-h", urls, "-f", str(conf)], ports.values(),
                 directory / "slapd.out"):
        yield ports


# --- PostgreSQL with ssl=on: our own cluster, never the machine's --------------------------------

def postgres_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(f"PostgreSQL's {name} is missing: run .ci/ensure-system")
    return found[-1]


def as_postgres(command: list[str]) -> list[str]:
    """initdb and postgres refuse root: run them as the postgres user when we are root."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextmanager
def postgres(directory: Path, tls: TlsFiles, ssl: bool = True):
    directory.mkdir(parents=True, exist_ok=True)
    open_to_all(directory)
    owner = pwd.getpwnam("postgres") if os.geteuid() == 0 else pwd.getpwuid(os.geteuid())
    os.chown(directory, owner.pw_uid, owner.pw_gid)
    files = readable_copy(tls, directory / "tls", owner.pw_name)
    data = directory / "data"
    subprocess.run(as_postgres([postgres_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]),
                   check=True, capture_output=True, timeout=120)
    port = free_port()
    command = [postgres_bin("postgres"), "-D", str(data), "-p", str(port), "-k", str(directory),
               "-c", "listen_addresses=127.0.0.1", "-c", f"ssl={'on' if ssl else 'off'}",
               "-c", f"ssl_cert_file={files.chain}", "-c", f"ssl_key_file={files.key}",
               "-c", "ssl_min_protocol_version=TLSv1.2", "-c", f"ssl_ciphers={TLS12_SUITES}"]
    with running(as_postgres(command), [port], directory / "postgres.out"):
        yield port
