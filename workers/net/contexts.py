"""The client side of a TLS connection as our probes and the pre-flight open it: a context that can
offer everything an audit must (legacy versions and suites), and what a server's first bytes are.

In the network package, apart from the scan's probes (workers/tls/probes.py), because the pre-flight
(reach.py) needs only this, and the load commands and the browser task run the pre-flight without the
scan engine.
"""

from __future__ import annotations

import ssl
import warnings
from collections.abc import Sequence

from workers.net import outcomes

with warnings.catch_warnings():     # deprecated in Python, still exactly what an audit must offer
    warnings.simplefilter("ignore", DeprecationWarning)
    _PY_VERSIONS = {
        "TLSv1.0": ssl.TLSVersion.TLSv1,
        "TLSv1.1": ssl.TLSVersion.TLSv1_1,
        "TLSv1.2": ssl.TLSVersion.TLSv1_2,
        "TLSv1.3": ssl.TLSVersion.TLSv1_3,
    }
# OpenSSL 3 refuses servers without RFC 5746 unless told otherwise; old servers are exactly what we audit.
_OP_LEGACY_SERVER_CONNECT = getattr(ssl, "OP_LEGACY_SERVER_CONNECT", 0x4)
# SECLEVEL=0 so OpenSSL 3 still offers legacy suites, TLS 1.0/1.1 and small keys.
_ALL_CIPHERS = "ALL:COMPLEMENTOFALL:@SECLEVEL=0"
_SSL2_MESSAGES = (0x00, 0x04)   # SSL 2.0 ERROR, SERVER-HELLO


def make_context(protocol: str | None = None, ciphers: str = _ALL_CIPHERS,
                 alpn: Sequence[str] | None = None) -> ssl.SSLContext:
    """A client context that verifies nothing (we audit, sslyze validates) and can offer legacy suites."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.options |= _OP_LEGACY_SERVER_CONNECT
    context.set_ciphers(ciphers)
    _set_versions(context, protocol)
    if alpn:
        context.set_alpn_protocols(list(alpn))
    return context


def _set_versions(context: ssl.SSLContext, protocol: str | None) -> None:
    """One protocol exactly, or TLS 1.0 and up (Python warns about 1.0/1.1; auditing them is the point)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if protocol is not None:
            context.minimum_version = context.maximum_version = _PY_VERSIONS[protocol]
        else:
            context.minimum_version = _PY_VERSIONS["TLSv1.0"]


def classify_first_bytes(first: bytes) -> str:
    if not first:
        return outcomes.WIRE_CLOSED
    if first.startswith(b"HTTP/") or first.lstrip()[:1] == b"<":  # a status line, or an HTML error page alone
        return outcomes.WIRE_HTTP
    if len(first) >= 2 and first[0] in (0x15, 0x16) and first[1] == 0x03:
        return outcomes.WIRE_TLS     # a TLS alert or handshake record
    if len(first) >= 3 and first[0] & 0x80 and first[2] in _SSL2_MESSAGES:
        return outcomes.WIRE_SSL2    # a 2-byte SSL 2.0 record header, then ERROR or SERVER-HELLO
    return outcomes.WIRE_OTHER
