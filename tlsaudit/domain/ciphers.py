"""What a cipher suite is made of, read from its IANA name: key exchange, bulk cipher, strength.

The grader, the findings and the UI all need the same answers ("is this suite forward
secret?", "how many bits count for the score?"), so they are decided here once.

Names follow sslyze: IANA names (`TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`), SSL 2.0 names
(`SSL_CK_RC4_128_WITH_MD5`) and a few OpenSSL-only ones (`OLD_TLS_...`, `RSA_WITH_AES_128_CCM`).
An unknown name never raises: it is classified "UNKNOWN" with the reported key size, so one
exotic suite cannot stop a scan from being graded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tlsaudit.domain.scanfacts import CipherSuite

# Key-exchange families that give forward secrecy (TLS 1.3 always does).
FORWARD_SECRET_KX = frozenset({"ECDHE", "DHE", "TLS13"})
SIXTY_FOUR_BIT_BLOCK = frozenset({"3DES", "DES", "IDEA", "RC2"})

# Bulk cipher patterns, matched against the part after "_WITH_" (or the whole TLS 1.3 name):
# (regex, cipher label, fixed bits or None to read the first group, mode).
_BULK = (
    (r"NULL", "NULL", 0, "NULL"),
    (r"AES_(128|256)_GCM", "AES-GCM", None, "AEAD"),
    (r"AES_(128|256)_CCM", "AES-CCM", None, "AEAD"),
    (r"AES_(128|256)_CBC", "AES", None, "CBC"),
    (r"CHACHA20_POLY1305", "CHACHA20", 256, "AEAD"),
    (r"CAMELLIA_(128|256)_GCM", "CAMELLIA-GCM", None, "AEAD"),
    (r"CAMELLIA_(128|256)_CBC", "CAMELLIA", None, "CBC"),
    (r"ARIA_(128|256)_GCM", "ARIA-GCM", None, "AEAD"),
    (r"ARIA_(128|256)_CBC", "ARIA", None, "CBC"),
    (r"(?:3DES_EDE|DES_192_EDE3)_CBC", "3DES", 168, "CBC"),
    (r"(?:DES40_CBC|DES_CBC_40)", "DES", 40, "CBC"),
    (r"(?:DES_CBC|DES_64_CBC)", "DES", 56, "CBC"),
    (r"RC4_(40|56|64|128)", "RC4", None, "STREAM"),
    (r"RC2_CBC_(40|56)", "RC2", None, "CBC"),
    (r"RC2_(128)_CBC", "RC2", None, "CBC"),
    (r"IDEA_(?:128_)?CBC", "IDEA", 128, "CBC"),
    (r"SEED_CBC", "SEED", 128, "CBC"),
    (r"28147_CNT", "GOST", 256, "STREAM"),
)
_MACS = {"SHA": "SHA1", "SHA256": "SHA256", "SHA384": "SHA384", "MD5": "MD5", "IMIT": "GOST28147"}


@dataclass(frozen=True)
class SuiteInfo:
    name: str
    protocol: str
    kx: str                     # ECDHE DHE RSA ECDH DH PSK SRP KRB5 GOST anon TLS13 UNKNOWN
    auth: str                   # RSA ECDSA DSS PSK SRP KRB5 GOST anon TLS13 UNKNOWN
    cipher: str                 # AES AES-GCM AES-CCM CHACHA20 3DES DES RC4 RC2 IDEA SEED CAMELLIA ARIA NULL ...
    mac: str                    # SHA1 SHA256 SHA384 MD5 AEAD ...
    bits: int                   # nominal symmetric key bits (3DES: 168)
    grading_bits: int           # what the SSL Labs cipher score uses (3DES: 168)
    security_bits: int          # real strength, used by the "< 112 bits" rule (3DES: 112)
    is_aead: bool
    is_cbc: bool
    is_forward_secret: bool
    is_export: bool
    is_rc4: bool
    is_null: bool
    is_anonymous: bool
    is_64bit_block: bool
    kx_rsa_bits: int | None     # RSA-equivalent strength of the ephemeral key; None = not reported


def classify(suite: CipherSuite) -> SuiteInfo:
    """Everything the rules need to know about one accepted suite."""
    kx, auth, is_export = _parse_key_exchange(suite.name)
    cipher, bits, mode, mac = _parse_bulk(suite.name, suite.key_size)
    is_anonymous = suite.is_anonymous or auth == "anon"
    return SuiteInfo(
        name=suite.name,
        protocol=suite.protocol,
        kx=kx,
        auth=auth,
        cipher=cipher,
        mac=mac,
        bits=bits,
        grading_bits=bits,
        security_bits=112 if cipher == "3DES" else bits,
        is_aead=mode == "AEAD",
        is_cbc=mode == "CBC",
        # Anonymous DH is ephemeral but unauthenticated: no secrecy worth the name.
        is_forward_secret=kx in FORWARD_SECRET_KX and not is_anonymous,
        is_export=is_export,
        is_rc4=cipher == "RC4",
        is_null=cipher == "NULL",
        is_anonymous=is_anonymous,
        is_64bit_block=cipher in SIXTY_FOUR_BIT_BLOCK,
        kx_rsa_bits=ephemeral_rsa_bits(suite),
    )


def nominal_bits(name: str, reported: int = 0) -> int:
    """Symmetric key bits as the name states them; `reported` when the name does not say.

    The name wins over sslyze's `key_size` because a few of its table entries are wrong
    (it reports TLS_DHE_RSA_WITH_ARIA_128_GCM_SHA256 as 256 bits).
    """
    return _parse_bulk(name, reported)[1]


def ephemeral_rsa_bits(suite: CipherSuite) -> int | None:
    """RSA-equivalent bits of the suite's ephemeral DH/ECDH key, None when not reported."""
    if suite.kx_bits is None or suite.kx_type is None:
        return None
    if suite.kx_type.upper() == "DH":
        return suite.kx_bits
    return rsa_equivalent_bits("EC", suite.kx_bits)


def rsa_equivalent_bits(key_type: str, bits: int) -> int:
    """Convert a key size to RSA-equivalent bits (NIST SP 800-57 pt. 1, table 2; spec §2.2).

    RSA, DSA and finite-field DH sizes are already RSA-like. Elliptic-curve sizes are mapped:
    160-223 -> 1024, 224-255 -> 2048, 256-383 -> 3072, 384-511 -> 7680, >= 512 -> 15360.
    X25519/Ed25519 count as 256 bits (nassl reports X25519 as 253).
    """
    kind = key_type.upper()
    if kind in ("ED25519", "X25519"):
        return _ec_to_rsa_bits(256)
    if kind in ("ED448", "X448"):
        return _ec_to_rsa_bits(448)
    if kind in ("EC", "ECDH", "ECDSA"):
        return _ec_to_rsa_bits(256 if bits == 253 else bits)
    return bits


def _ec_to_rsa_bits(bits: int) -> int:
    if bits >= 512:
        return 15360
    if bits >= 384:
        return 7680
    if bits >= 256:
        return 3072
    if bits >= 224:
        return 2048
    if bits >= 160:
        return 1024
    return 512  # below any NIST row: as weak as a 512-bit RSA key


def strength_label(info: SuiteInfo) -> str:
    """"strong" / "acceptable" / "weak" / "insecure", for colouring suite tables."""
    if _is_insecure(info):
        return "insecure"
    if info.is_64bit_block or not info.is_forward_secret:
        return "weak"
    if info.kx_rsa_bits is not None and info.kx_rsa_bits < 2048:
        return "weak"
    if info.is_aead:
        return "strong"
    return "acceptable"


def _is_insecure(info: SuiteInfo) -> bool:
    if info.is_null or info.is_export or info.is_anonymous or info.is_rc4:
        return True
    if info.cipher == "DES" or info.security_bits < 112:
        return True
    # An ephemeral key below 1024-bit RSA strength is breakable (Logjam).
    return info.kx_rsa_bits is not None and info.kx_rsa_bits < 1024


# --- name parsing -----------------------------------------------------------------------

def _split_name(name: str) -> tuple[str, str]:
    """(key-exchange part, bulk part) of a suite name; key exchange "" for TLS 1.3 suites."""
    core = re.sub(r"^(OLD_)?(TLS_|SSL_CK_)?", "", name)
    if name.startswith("SSL_CK_"):
        # SSL 2.0 names put the cipher first: SSL_CK_RC4_128_WITH_MD5 (RSA key exchange).
        bulk, _, mac = core.partition("_WITH_")
        return "SSL2", f"{bulk}_{mac}"
    kx, sep, bulk = core.partition("_WITH_")
    return (kx, bulk) if sep else ("", core)


def _parse_key_exchange(name: str) -> tuple[str, str, bool]:
    """(kx family, authentication, is_export) from the part before "_WITH_"."""
    part, _ = _split_name(name)
    is_export = "EXPORT" in name
    if part == "":
        return "TLS13", "TLS13", False
    if part == "SSL2":
        return "RSA", "RSA", is_export
    tokens = [t for t in part.split("_") if not t.startswith("EXPORT")]
    return (*_kx_from_tokens(tokens), is_export)


def _kx_from_tokens(tokens: list[str]) -> tuple[str, str]:
    head, rest = tokens[0], tokens[1:]
    second = rest[0] if rest else head
    if "anon" in rest or head == "NULL":
        return "anon", "anon"
    if head in ("ECDHE", "DHE", "ECDH", "DH"):
        return head, _auth_name(second)
    if head == "RSA":
        return "RSA", "PSK" if second == "PSK" else "RSA"
    if head == "SRP":
        return "SRP", _auth_name(rest[-1]) if len(rest) > 1 else "SRP"
    if head in ("PSK", "KRB5"):
        return head, head
    if head.startswith("GOSTR"):
        return "GOST", "GOST"
    return "UNKNOWN", "UNKNOWN"


def _auth_name(token: str) -> str:
    return {"RSA": "RSA", "ECDSA": "ECDSA", "DSS": "DSS", "PSK": "PSK"}.get(token, "UNKNOWN")


def _parse_bulk(name: str, reported: int) -> tuple[str, int, str, str]:
    """(cipher label, bits, mode, mac) from the part after "_WITH_"."""
    _, bulk = _split_name(name)
    for pattern, label, fixed_bits, mode in _BULK:
        match = re.match(pattern, bulk)
        if match:
            bits = fixed_bits if fixed_bits is not None else int(match.group(1))
            if "EXPORT40" in bulk:
                bits = 40
            return label, bits, mode, _mac_name(bulk, mode)
    return "UNKNOWN", reported, "UNKNOWN", _mac_name(bulk, "UNKNOWN")


def _mac_name(bulk: str, mode: str) -> str:
    if mode == "AEAD":
        return "AEAD"
    return _MACS.get(bulk.rsplit("_", 1)[-1], "UNKNOWN")
