"""Force TLS 1.3 cipher suites on a Python 3.11 `ssl.SSLContext` (CPython has no API before 3.15).

Path used: ctypes. `SSL_CTX_set_ciphersuites` is called in the libssl that `_ssl` itself has loaded
(found in /proc/self/maps, else `ldd` of `_ssl`'s .so, else ctypes.util; its `OpenSSL_version_num()`
must equal `ssl.OPENSSL_VERSION_NUMBER`), on the `SSL_CTX*` read from the SSLContext object: the first
field after PyObject_HEAD (CPython's `PySSLContext`). The layout assumption is checked before any
write: `SSL_CTX_get_options(ptr)` must track `ctx.options` through two changes, so a wrong offset is
refused instead of corrupting memory. `tls13_forcing_works()` additionally proves the effect end to
end: against an in-process TLS 1.3 server, each forced suite must be the negotiated one.

If ctypes cannot work (static OpenSSL, other interpreter), the documented fallback is
`openssl_conf_env(suite)`: an OPENSSL_CONF file with `[system_default] Ciphersuites = ...`, which
OpenSSL applies to every SSL_CTX of a *new* process; `workers.load.handshake` then runs the
measurement in a subprocess (see `run_handshakes`).
"""

from __future__ import annotations

import _ssl
import ctypes
import ctypes.util
import functools
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

TLS13_SUITES = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")
_SUITE_LIST = re.compile(r"^TLS_[A-Z0-9_]+(:TLS_[A-Z0-9_]+)*$")


class Tls13Unavailable(RuntimeError):
    """TLS 1.3 suites cannot be forced in this process (use the OPENSSL_CONF subprocess path)."""


def set_tls13_suites(ctx: ssl.SSLContext, suites: str) -> None:
    """Restrict `ctx` to the TLS 1.3 suites `suites` ("TLS_AES_128_GCM_SHA256[:...]", IANA names)."""
    if not isinstance(ctx, ssl.SSLContext):
        raise TypeError(f"expected an ssl.SSLContext, got {type(ctx).__name__}")
    if not _SUITE_LIST.match(suites or ""):
        raise ValueError(f"{suites!r} is not a colon-separated list of TLS 1.3 suite names")
    lib = _libssl()
    if lib is None:
        raise Tls13Unavailable(_load_error())
    if lib.SSL_CTX_set_ciphersuites(_ctx_pointer(ctx, lib), suites.encode("ascii")) != 1:
        raise ValueError(f"OpenSSL refused the TLS 1.3 suite list {suites!r}")


def ctypes_path_available() -> bool:
    """True when set_tls13_suites can run here (library found, version matches)."""
    return _libssl() is not None


def tls13_forcing_works() -> bool:
    """End-to-end self-check: each standard suite, forced on the client, is what a TLS 1.3 handshake negotiates."""
    return _self_check()


@functools.lru_cache(maxsize=1)
def _self_check() -> bool:
    if _libssl() is None:
        return False
    try:
        with _SelfCheckServer() as server:
            return all(server.negotiate(suite) == suite for suite in TLS13_SUITES)
    except (OSError, ssl.SSLError, ValueError, Tls13Unavailable):
        return False


def openssl_conf_env(suites: str, directory: str | None = None) -> dict[str, str]:
    """Environment for a child process whose every SSL_CTX offers only `suites` in TLS 1.3 (fallback path)."""
    if not _SUITE_LIST.match(suites or ""):
        raise ValueError(f"{suites!r} is not a colon-separated list of TLS 1.3 suite names")
    fd, path = tempfile.mkstemp(prefix="tlsaudit-tls13-", suffix=".cnf", dir=directory)
    with os.fdopen(fd, "w") as conf:
        conf.write("openssl_conf = openssl_init\n\n[openssl_init]\nssl_conf = ssl_module\n\n"
                   "[ssl_module]\nsystem_default = system_default_sect\n\n"
                   f"[system_default_sect]\nCiphersuites = {suites}\n")
    return {**os.environ, "OPENSSL_CONF": path}


# --- finding libssl ------------------------------------------------------------------------------

_LOAD_ERRORS: list[str] = []


def _load_error() -> str:
    return "; ".join(_LOAD_ERRORS) or "libssl not found"


@functools.lru_cache(maxsize=1)
def _libssl() -> ctypes.CDLL | None:
    """The libssl `_ssl` runs on, with prototypes set; None (reason in _LOAD_ERRORS) when unusable."""
    for path in _candidate_paths():
        try:
            lib = ctypes.CDLL(path)
            lib.SSL_CTX_set_ciphersuites
            lib.SSL_CTX_get_options
        except (OSError, AttributeError) as exc:
            _LOAD_ERRORS.append(f"{path}: {exc}")
            continue
        version = _version_of(lib, path)
        if version != ssl.OPENSSL_VERSION_NUMBER:
            _LOAD_ERRORS.append(f"{path}: OpenSSL {version:#x} is not _ssl's {ssl.OPENSSL_VERSION_NUMBER:#x}")
            continue
        lib.SSL_CTX_set_ciphersuites.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
        lib.SSL_CTX_set_ciphersuites.restype = ctypes.c_int
        lib.SSL_CTX_get_options.argtypes = (ctypes.c_void_p,)
        lib.SSL_CTX_get_options.restype = ctypes.c_uint64
        return lib
    return None


def _version_of(lib: ctypes.CDLL, path: str) -> int:
    """OpenSSL_version_num lives in libcrypto; a libssl CDLL resolves it through its dependencies."""
    try:
        fn = lib.OpenSSL_version_num
    except AttributeError:
        fn = ctypes.CDLL(path.replace("libssl", "libcrypto")).OpenSSL_version_num
    fn.restype = ctypes.c_ulong
    return fn()


def _candidate_paths() -> list[str]:
    """Most certain first: what is mapped into this process, then what _ssl's .so links, then the loader's pick."""
    paths = _mapped_libssl() + _ldd_libssl()
    found = ctypes.util.find_library("ssl")
    if found:
        paths.append(found)
    paths.append(_ssl.__file__)  # a statically linked _ssl exports the symbols itself
    return list(dict.fromkeys(paths))


def _mapped_libssl() -> list[str]:
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    return sorted({line.split()[-1] for line in maps.splitlines()
                   if re.search(r"/libssl[.-][^/]*\.so", line) or line.rstrip().endswith(("/libssl.so.3", "/libssl.so"))})


def _ldd_libssl() -> list[str]:
    return linked_libssl(_ssl.__file__)


def linked_libssl(shared_object: str) -> list[str]:
    """The libssl files the loader links `shared_object` to (ldd), real paths; [] when none or unknown."""
    try:
        out = subprocess.run(["ldd", shared_object], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [os.path.realpath(path) for path in re.findall(r"libssl\S*\s+=>\s+(\S+)", out)]


# --- the SSL_CTX* inside the SSLContext ----------------------------------------------------------

# PyObject_HEAD: ob_refcnt + ob_type, plus _ob_next/_ob_prev in a Py_TRACE_REFS build.
_HEAD_SIZE = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p) \
    + (2 * ctypes.sizeof(ctypes.c_void_p) if hasattr(sys, "getobjects") else 0)
_layout_lock = threading.Lock()


def _ctx_pointer(ctx: ssl.SSLContext, lib: ctypes.CDLL) -> int:
    """Read PySSLContext.ctx and prove it is ctx's SSL_CTX (options round-trip) before anyone writes through it."""
    pointer = ctypes.c_void_p.from_address(id(ctx) + _HEAD_SIZE).value
    if not pointer:
        raise Tls13Unavailable("SSLContext layout: NULL SSL_CTX pointer")
    with _layout_lock:
        original = ctx.options
        try:
            for flip in (ssl.OP_NO_TICKET, 0):
                ctx.options = (original ^ flip) if flip else original
                if lib.SSL_CTX_get_options(pointer) != int(ctx.options):
                    raise Tls13Unavailable("SSLContext layout: the pointer after PyObject_HEAD is not its SSL_CTX")
        finally:
            ctx.options = original
    return pointer


# --- in-process TLS 1.3 server for the self-check ------------------------------------------------

class _SelfCheckServer:
    """A one-thread TLS 1.3 server on 127.0.0.1 with a throwaway self-signed certificate."""

    def __enter__(self) -> "_SelfCheckServer":
        self._dir = tempfile.TemporaryDirectory(prefix="tlsaudit-tls13-check-")
        cert, key = _self_signed(Path(self._dir.name))
        self._server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._server_ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        self._server_ctx.load_cert_chain(cert, key)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(5)
        return self

    def __exit__(self, *exc) -> None:
        self._listener.close()
        self._dir.cleanup()

    def negotiate(self, suite: str) -> str | None:
        client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        client_ctx.check_hostname = False
        client_ctx.verify_mode = ssl.CERT_NONE
        client_ctx.minimum_version = client_ctx.maximum_version = ssl.TLSVersion.TLSv1_3
        set_tls13_suites(client_ctx, suite)
        accepted = threading.Thread(target=self._serve_one, daemon=True)
        accepted.start()
        try:
            with socket.create_connection(self._listener.getsockname(), timeout=5) as raw, \
                    client_ctx.wrap_socket(raw) as tls:
                return tls.cipher()[0]
        finally:
            accepted.join(5)

    def _serve_one(self) -> None:
        try:
            conn, _ = self._listener.accept()
            with self._server_ctx.wrap_socket(conn, server_side=True):
                pass
        except (OSError, ssl.SSLError):
            pass


def _self_signed(directory: Path) -> tuple[Path, Path]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tls13-self-check")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1)).sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path
