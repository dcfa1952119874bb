"""A TLS ClientHello we write byte by byte, and the server's first answer read back.

Neither Python's ssl module nor sslyze's nassl (OpenSSL 1.1.1) can choose the TLS 1.3 suites
they offer, nor offer the post-quantum hybrid groups. We do not need to finish a handshake to
learn what a server picks: its ServerHello (or HelloRetryRequest) names the version, the suite
and the key-exchange group. So we send one ClientHello and read until that message.

Key shares are real: X25519 and NIST points from `cryptography`; an ML-KEM encapsulation key
that passes FIPS 203's input check (see `mlkem_encapsulation_key`).
"""

from __future__ import annotations

import dataclasses
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, x25519

from workers.tls.probes import Endpoint

# IANA TLS Supported Groups (codepoints) and names as the registry spells them.
GROUPS = {
    0x0017: "secp256r1", 0x0018: "secp384r1", 0x0019: "secp521r1", 0x001D: "x25519", 0x001E: "x448",
    0x0100: "ffdhe2048", 0x0101: "ffdhe3072", 0x0102: "ffdhe4096",
    0x11EB: "SecP256r1MLKEM768", 0x11EC: "X25519MLKEM768", 0x11ED: "SecP384r1MLKEM1024",
    0x6399: "X25519Kyber768Draft00",
}
GROUP_IDS = {name: code for code, name in GROUPS.items()}

TLS13_SUITES = {
    0x1301: "TLS_AES_128_GCM_SHA256", 0x1302: "TLS_AES_256_GCM_SHA384", 0x1303: "TLS_CHACHA20_POLY1305_SHA256",
    0x1304: "TLS_AES_128_CCM_SHA256", 0x1305: "TLS_AES_128_CCM_8_SHA256",
}
TLS13_SUITE_IDS = {name: code for code, name in TLS13_SUITES.items()}

VERSIONS = {0x0304: "TLSv1.3", 0x0303: "TLSv1.2", 0x0302: "TLSv1.1", 0x0301: "TLSv1.0", 0x0300: "SSLv3"}

# What browsers send: ECDSA, RSA-PSS, RSA PKCS#1 (and SHA-1 last, for old servers), EdDSA.
DEFAULT_SIGNATURE_ALGORITHMS = (0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601,
                                0x0807, 0x0808, 0x0201, 0x0203)

# RFC 8446 4.1.3: a ServerHello with this random is a HelloRetryRequest.
HRR_RANDOM = bytes.fromhex("CF21AD74E59A6111BE1D8C021E65B891C2A211167ABB8C5E079E09E2C8A8339C")

_EXT_SERVER_NAME, _EXT_GROUPS, _EXT_POINT_FORMATS, _EXT_SIG_ALGS = 0x0000, 0x000A, 0x000B, 0x000D
_EXT_ALPN, _EXT_EMS, _EXT_VERSIONS, _EXT_PSK_MODES, _EXT_KEY_SHARE = 0x0010, 0x0017, 0x002B, 0x002D, 0x0033
_EXT_RENEGOTIATION_INFO = 0xFF01
_MAX_RECORDS = 16                 # ServerHello, then (TLS 1.2) certificates and the key exchange


@dataclass(frozen=True)
class ClientHelloSpec:
    """What one ClientHello offers. Shares are sent for `key_share_groups` only (a subset of `groups`)."""
    suites: Sequence[int]
    groups: Sequence[int]
    key_share_groups: Sequence[int]
    versions: Sequence[int] = (0x0304,)
    signature_algorithms: Sequence[int] = DEFAULT_SIGNATURE_ALGORITHMS
    alpn: Sequence[str] = ()


@dataclass(frozen=True)
class ServerAnswer:
    """The server's first answer to one ClientHello.

    kind: "server_hello" (it chose), "hello_retry" (it wants a share for `group`), "alert" (it
    refused: `alert` is the description code), "closed" (it hung up without a word)."""
    kind: str
    version: int | None = None
    suite: int | None = None
    group: int | None = None              # TLS 1.3: from key_share (or the HRR's selected group)
    server_share_bytes: int | None = None
    alert: int | None = None
    extensions: tuple[int, ...] = field(default=())
    dh_bits: int | None = None            # TLS <= 1.2 DHE: the server's prime size

    @property
    def version_name(self) -> str | None:
        return VERSIONS.get(self.version) if self.version is not None else None

    @property
    def suite_name(self) -> str | None:
        return TLS13_SUITES.get(self.suite, f"0x{self.suite:04X}") if self.suite is not None else None

    @property
    def group_name(self) -> str | None:
        return group_name(self.group) if self.group is not None else None


def group_name(code: int) -> str:
    return GROUPS.get(code, f"0x{code:04X}")


# --- key shares ------------------------------------------------------------------------------------

_MLKEM_Q = 3329


def mlkem_encapsulation_key(k: int) -> bytes:
    """An ML-KEM encapsulation key (k=3: ML-KEM-768, 1184 bytes; k=4: ML-KEM-1024, 1568 bytes).

    FIPS 203 7.2: a server may check only that the key has the right length and that every
    12-bit coefficient of t-hat is below q (ByteEncode12(ByteDecode12(ek)) == ek); nothing else
    about an encapsulation key is checkable. A real one is t-hat = A s + e, which looks uniform
    mod q, followed by a 32-byte seed: so uniform coefficients below q and a random seed are a
    valid key of exactly that shape. We never decapsulate (we stop at the ServerHello), so no
    secret key is needed.
    """
    coefficients = []
    while len(coefficients) < 256 * k:
        for chunk in struct.iter_unpack("<H", os.urandom(2 * 256 * k)):
            value = chunk[0] & 0x0FFF
            if value < _MLKEM_Q and len(coefficients) < 256 * k:
                coefficients.append(value)
    packed = bytearray()
    for a, b in zip(coefficients[0::2], coefficients[1::2]):
        packed += bytes((a & 0xFF, (a >> 8) | ((b & 0x0F) << 4), b >> 4))
    return bytes(packed) + os.urandom(32)


def _x25519_share() -> bytes:
    return x25519.X25519PrivateKey.generate().public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _ec_share(curve: ec.EllipticCurve) -> bytes:
    return ec.generate_private_key(curve).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def key_share(group: int) -> bytes:
    """Our share for `group`, laid out as its specification says.

    draft-ietf-tls-ecdhe-mlkem: X25519MLKEM768 puts the ML-KEM key FIRST (1184 + 32 bytes);
    SecP256r1MLKEM768 and SecP384r1MLKEM1024 put the EC point first (65 + 1184, 97 + 1568).
    draft-tls-westerbaan-xyber768d00 (X25519Kyber768Draft00): X25519 first (32 + 1184).
    """
    shares = {
        0x001D: _x25519_share,
        0x0017: lambda: _ec_share(ec.SECP256R1()),
        0x0018: lambda: _ec_share(ec.SECP384R1()),
        0x0019: lambda: _ec_share(ec.SECP521R1()),
        0x11EC: lambda: mlkem_encapsulation_key(3) + _x25519_share(),
        0x11EB: lambda: _ec_share(ec.SECP256R1()) + mlkem_encapsulation_key(3),
        0x11ED: lambda: _ec_share(ec.SECP384R1()) + mlkem_encapsulation_key(4),
        0x6399: lambda: _x25519_share() + mlkem_encapsulation_key(3),
    }
    if group not in shares:
        raise ValueError(f"no key share for group {group_name(group)}")
    return shares[group]()


# --- the ClientHello ---------------------------------------------------------------------------------

def _u8(data: bytes) -> bytes:
    return struct.pack("!B", len(data)) + data


def _u16(data: bytes) -> bytes:
    return struct.pack("!H", len(data)) + data


def _u16_list(values: Sequence[int]) -> bytes:
    return b"".join(struct.pack("!H", v) for v in values)


def _extension(kind: int, body: bytes) -> bytes:
    return struct.pack("!H", kind) + _u16(body)


def _server_name(host: str) -> bytes:
    return _u16(b"\x00" + _u16(host.encode("ascii")))


def is_ip_literal(host: str) -> bool:
    return host.replace(".", "").isdigit() or ":" in host


def client_hello(host: str, spec: ClientHelloSpec) -> bytes:
    """The whole TLS record carrying one ClientHello (RFC 8446 4.1.2), SNI = host unless it is an IP."""
    extensions = []
    if host and not is_ip_literal(host):          # RFC 6066: no IP literals in SNI
        extensions.append(_extension(_EXT_SERVER_NAME, _server_name(host)))
    extensions += [
        _extension(_EXT_GROUPS, _u16(_u16_list(spec.groups))),
        _extension(_EXT_POINT_FORMATS, _u8(b"\x00")),
        _extension(_EXT_SIG_ALGS, _u16(_u16_list(spec.signature_algorithms))),
        _extension(_EXT_EMS, b""),
        _extension(_EXT_RENEGOTIATION_INFO, _u8(b"")),
    ]
    if spec.alpn:
        extensions.append(_extension(_EXT_ALPN, _u16(b"".join(_u8(p.encode("ascii")) for p in spec.alpn))))
    if 0x0304 in spec.versions:
        shares = b"".join(struct.pack("!H", g) + _u16(key_share(g)) for g in spec.key_share_groups)
        extensions += [
            _extension(_EXT_VERSIONS, _u8(_u16_list(spec.versions))),
            _extension(_EXT_PSK_MODES, _u8(b"\x01")),
            _extension(_EXT_KEY_SHARE, _u16(shares)),
        ]
    legacy_version = min(max(spec.versions), 0x0303)     # TLS 1.3 says 1.2 here; 1.0-1.2 say themselves
    body = (struct.pack("!H", legacy_version) + os.urandom(32) + _u8(os.urandom(32)) + _u16(_u16_list(spec.suites))
            + _u8(b"\x00") + _u16(b"".join(extensions)))
    handshake = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16\x03\x01" + _u16(handshake)


# --- the answer -------------------------------------------------------------------------------------

def exchange(endpoint: Endpoint, spec: ClientHelloSpec, tls12_group: bool = False) -> ServerAnswer:
    """Send one ClientHello to the pinned address and read the server's first answer; with
    `tls12_group`, a TLS <= 1.2 answer also gets its ECDHE group (or DH size) from the
    ServerKeyExchange. Raises OSError (timeouts included) when the connection itself fails."""
    limit = endpoint.connection()
    with endpoint.connect(limit) as sock:
        sock.sendall(client_hello(endpoint.host, spec))
        return read_answer(lambda n: _recv_exactly(sock, n), tls12_group=tls12_group)


def _recv_exactly(sock, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            break
        data += chunk
    return data


class _Alert(Exception):
    def __init__(self, answer: "ServerAnswer"):
        self.answer = answer


def _handshake_messages(recv):
    """(type, body) of each plaintext handshake message, across records; raises _Alert on an alert."""
    buffer = b""
    for _ in range(_MAX_RECORDS):
        header = recv(5)
        if len(header) < 5:
            raise _Alert(ServerAnswer("closed"))
        content_type, length = header[0], struct.unpack("!H", header[3:5])[0]
        payload = recv(length)
        if len(payload) < length:
            raise _Alert(ServerAnswer("closed"))
        if content_type == 0x15:
            raise _Alert(ServerAnswer("alert", alert=payload[1] if len(payload) > 1 else None))
        if content_type != 0x16:
            return                                          # encrypted from here on (TLS 1.3) or CCS
        buffer += payload
        while len(buffer) >= 4 and len(buffer) >= 4 + struct.unpack("!I", b"\x00" + buffer[1:4])[0]:
            size = struct.unpack("!I", b"\x00" + buffer[1:4])[0]
            yield buffer[0], buffer[4:4 + size]
            buffer = buffer[4 + size:]


def read_answer(recv, tls12_group: bool = False) -> ServerAnswer:
    """Records until the ServerHello (possibly split over records) or an alert. `recv(n)` returns
    up to n bytes, fewer only at the end of the stream."""
    messages = _handshake_messages(recv)
    try:
        kind, body = next(messages, (None, b""))
        if kind is None:
            raise ValueError("no ServerHello within the first records")
        if kind != 0x02:
            raise ValueError(f"the server's first handshake message is type {kind}, not ServerHello")
        answer = parse_server_hello(body)
        if not tls12_group or answer.kind != "server_hello" or answer.version == 0x0304:
            return answer
        for kind, body in messages:
            if kind == 12:                                  # ServerKeyExchange
                return dataclasses.replace(answer, **_key_exchange_group(body))
            if kind == 14:                                  # ServerHelloDone: static RSA, no ephemeral key
                return answer
    except _Alert as alert:
        return alert.answer
    return answer


def _key_exchange_group(body: bytes) -> dict:
    """ECDHE: curve_type 3 (named_curve) + group; DHE: the prime's length gives its size."""
    if body[:1] == b"\x03" and len(body) >= 3:
        return {"group": struct.unpack("!H", body[1:3])[0]}
    if len(body) >= 2:
        return {"dh_bits": struct.unpack("!H", body[:2])[0] * 8}
    return {}


def parse_server_hello(body: bytes) -> ServerAnswer:
    """RFC 8446 4.1.3 (and RFC 5246 7.4.1.3 for TLS <= 1.2, which has no supported_versions)."""
    legacy_version = struct.unpack("!H", body[0:2])[0]
    random = body[2:34]
    at = 35 + body[34]                                    # after the session id echo
    suite = struct.unpack("!H", body[at:at + 2])[0]
    at += 3                                               # suite, compression method
    version, group, share_bytes, seen = legacy_version, None, None, []
    if at + 2 <= len(body):
        end = at + 2 + struct.unpack("!H", body[at:at + 2])[0]
        at += 2
        while at + 4 <= end:
            kind, size = struct.unpack("!HH", body[at:at + 4])
            data = body[at + 4:at + 4 + size]
            seen.append(kind)
            if kind == _EXT_VERSIONS and size == 2:
                version = struct.unpack("!H", data)[0]
            elif kind == _EXT_KEY_SHARE and size >= 2:
                group = struct.unpack("!H", data[:2])[0]
                if size >= 4:
                    share_bytes = struct.unpack("!H", data[2:4])[0]
            at += 4 + size
    kind = "hello_retry" if random == HRR_RANDOM else "server_hello"
    return ServerAnswer(kind, version=version, suite=suite, group=group, server_share_bytes=share_bytes,
                        extensions=tuple(seen))


# --- recorded clients: a ClientHello read back into what it offers ----------------------------------

def is_grease(value: int) -> bool:
    """RFC 8701 GREASE values (0x0A0A, 0x1A1A, ...): noise a server must ignore; not replayed."""
    return (value & 0x0F0F) == 0x0A0A and (value >> 8) == (value & 0xFF)


def parse_client_hello(record: bytes) -> dict:
    """What a recorded ClientHello offers, GREASE dropped: suites, groups, key-share groups,
    versions, signature algorithms, ALPN, in the client's order."""
    body = record[5 + 4:] if record[0] == 0x16 else record[4:]
    at = 2 + 32
    at += 1 + body[at]                                          # session id
    suites_len = struct.unpack("!H", body[at:at + 2])[0]
    suites = [v for (v,) in struct.iter_unpack("!H", body[at + 2:at + 2 + suites_len])]
    at += 2 + suites_len
    at += 1 + body[at]                                          # compression methods
    out = {"suites": suites, "groups": [], "key_share_groups": [], "versions": [struct.unpack("!H", body[:2])[0]],
           "signature_algorithms": [], "alpn": []}
    end = at + 2 + struct.unpack("!H", body[at:at + 2])[0] if at + 2 <= len(body) else at   # SSL 3.0: no extensions
    at += 2
    while at + 4 <= end:
        kind, size = struct.unpack("!HH", body[at:at + 4])
        data = body[at + 4:at + 4 + size]
        if kind == _EXT_GROUPS:
            out["groups"] = [v for (v,) in struct.iter_unpack("!H", data[2:])]
        elif kind == _EXT_SIG_ALGS:
            out["signature_algorithms"] = [v for (v,) in struct.iter_unpack("!H", data[2:])]
        elif kind == _EXT_VERSIONS:
            out["versions"] = [v for (v,) in struct.iter_unpack("!H", data[1:])]
        elif kind == _EXT_KEY_SHARE:
            shares, i = data[2:], 0
            while i + 4 <= len(shares):
                group, length = struct.unpack("!HH", shares[i:i + 4])
                out["key_share_groups"].append(group)
                i += 4 + length
        elif kind == _EXT_ALPN:
            names, i = data[2:], 0
            while i < len(names):
                out["alpn"].append(names[i + 1:i + 1 + names[i]].decode("ascii", "replace"))
                i += 1 + names[i]
        at += 4 + size
    return {k: [v for v in values if not (isinstance(v, int) and is_grease(v))] for k, values in out.items()}


def spec_from_profile(profile: dict) -> ClientHelloSpec:
    """A recorded client's offer, with fresh key shares (ours: we cannot reuse its ephemeral keys)."""
    shares = [g for g in profile["key_share_groups"] if g in _SHAREABLE]
    return ClientHelloSpec(suites=profile["suites"], groups=profile["groups"], key_share_groups=shares,
                           versions=profile["versions"], signature_algorithms=profile["signature_algorithms"],
                           alpn=profile["alpn"])


_SHAREABLE = (0x001D, 0x0017, 0x0018, 0x0019, 0x11EC, 0x11EB, 0x11ED, 0x6399)
