"""The clear-text exchange before TLS on a STARTTLS service: each dialect's prelude, on a
connected socket, so that every probe of ours (pre-flight, preference, post-quantum, client
simulation) handshakes where sslyze does. sslyze does its own prelude for its own connections.

`negotiate(sock, dialect, host, timeout=..., until=...)` returns when the next byte the server
expects is our ClientHello. Every read waits at most `timeout`, never past `until` (a monotonic
instant: the pre-flight's end; probes' DeadlineSockets bound themselves), and the server may send at
most `MAX_PRELUDE_BYTES` before TLS starts, so neither a silent nor a chatty server holds a probe.
A server that does not start TLS raises `StartTlsRefused` (an OSError, so every probe's network
`except` reports it as its failure), a slow one `StartTlsStalled` (a socket.timeout).

Dialects are sslyze's ProtocolWithOpportunisticTlsEnum names (domain/services.py `starttls`).
"""

from __future__ import annotations

import socket
import time

# A greeting and a capability list take a few hundred bytes; 64 KB is already hostile.
MAX_PRELUDE_BYTES = 65536
EHLO_NAME = "tlsaudit.invalid"      # RFC 2606: says who we are without claiming a real name
# RFC 4511 ExtendedRequest, messageID 1, requestName 1.3.6.1.4.1.1466.20037 (StartTLS, RFC 4513).
LDAP_STARTTLS = b"\x30\x1d\x02\x01\x01\x77\x18\x80\x16" + b"1.3.6.1.4.1.1466.20037"
# PostgreSQL SSLRequest: length 8, code 80877103.
POSTGRES_SSL_REQUEST = b"\x00\x00\x00\x08\x04\xd2\x16\x2f"
XMPP_STREAM = ("<?xml version='1.0'?><stream:stream xmlns='jabber:client' "
               "xmlns:stream='http://etherx.jabber.org/streams' to='{host}' version='1.0'>")
XMPP_STARTTLS = b"<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>"


class StartTlsRefused(ConnectionError):
    """The server answered, but not with a go-ahead for TLS; str(exc) says what it did, in words."""


class StartTlsStalled(socket.timeout):
    """The server stopped answering the clear-text exchange (a TimeoutError, like every timeout)."""


class _Wire:
    """Reads of one prelude: each bounded by `timeout` and `until`, all by MAX_PRELUDE_BYTES."""

    def __init__(self, sock: socket.socket, timeout: float, until: float | None, dialect: str):
        self.sock, self.timeout, self.until, self.dialect = sock, timeout, until, dialect
        self.buffer = b""
        self.received = 0
        self.step = "its greeting"

    def send(self, data: bytes, step: str) -> None:
        self.step = step
        self._wait()
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            raise StartTlsRefused(f"the server closed the connection before we could send {step}") from None

    def recv_some(self) -> bytes:
        shortened = self._wait() < self.timeout
        try:
            chunk = self.sock.recv(4096)
        except (socket.timeout, TimeoutError) as exc:
            raise self.stalled(shortened, exc) from None
        if not chunk:
            raise StartTlsRefused(f"the server closed the connection instead of answering {self.step}")
        self.received += len(chunk)
        if self.received > MAX_PRELUDE_BYTES:
            raise StartTlsRefused(f"the server sent more than {MAX_PRELUDE_BYTES} bytes before TLS "
                                  f"(while we waited for {self.step})")
        return chunk

    def _wait(self) -> float:
        """Set the socket's timeout for the next operation; how long it is."""
        wait = self.timeout
        if self.until is not None:
            wait = min(wait, self.until - time.monotonic())
            if wait <= 0:
                raise self.stalled(True)
        self.sock.settimeout(wait)
        return wait

    def stalled(self, by_limit: bool, exc: BaseException | None = None) -> StartTlsStalled:
        """A server that went quiet, or one that kept talking without getting anywhere (a trickle)."""
        waiting_for = "its greeting" if self.step == "its greeting" else f"the answer to {self.step}"
        if by_limit or (exc is not None and "unfinished" in str(exc)):
            return StartTlsStalled(f"{waiting_for} was still incomplete at the deadline of the connection, after "
                                   f"{self.received} bytes (a server that answers far too slowly, or on purpose)")
        if self.step == "its greeting":
            return StartTlsStalled(f"the server sent no greeting within {self.timeout:g} s")
        return StartTlsStalled(f"the server did not answer {self.step} within {self.timeout:g} s")

    def line(self) -> str:
        while b"\n" not in self.buffer:
            self.buffer += self.recv_some()
        raw, self.buffer = self.buffer.split(b"\n", 1)
        return raw.rstrip(b"\r").decode("utf-8", "replace")

    def until_contains(self, *markers: bytes) -> bytes:
        """Everything up to the end of the first of `markers` to appear; the rest stays buffered."""
        while not any(marker in self.buffer for marker in markers):
            self.buffer += self.recv_some()
        end = min(self.buffer.find(m) + len(m) for m in markers if m in self.buffer)
        seen, self.buffer = self.buffer[:end], self.buffer[end:]
        return seen

    def exactly(self, count: int) -> bytes:
        while len(self.buffer) < count:
            self.buffer += self.recv_some()
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def leftover_check(self) -> None:
        """Bytes after the go-ahead, before our ClientHello, are an injection attempt (CVE-2011-0411
        in reverse: the server's side); nothing honest sends them."""
        if self.buffer:
            raise StartTlsRefused(f"the server sent {len(self.buffer)} unexpected bytes after agreeing to "
                                  "start TLS")


def negotiate(sock: socket.socket, dialect: str | None, host: str, *, timeout: float,
              until: float | None = None) -> None:
    """Do `dialect`'s prelude on `sock` (nothing for implicit TLS)."""
    if dialect is None:
        return
    try:
        run = _DIALECTS[dialect]
    except KeyError:
        raise ValueError(f"no STARTTLS prelude for {dialect!r}") from None
    wire = _Wire(sock, timeout, until, dialect)
    run(wire, host)
    wire.leftover_check()


def smtp_reply(wire: _Wire) -> tuple[int, list[str]]:
    """One SMTP reply (RFC 5321 4.2: `code-text` lines, then `code text`): its code and its lines."""
    lines = []
    while True:
        line = wire.line()
        if len(line) < 3 or not line[:3].isdigit():
            raise StartTlsRefused(f"the server's answer to {wire.step} is not SMTP: {_quote(line)}")
        lines.append(line[4:])
        if line[3:4] != "-":
            return int(line[:3]), lines


def _smtp(wire: _Wire, host: str) -> None:
    code, lines = smtp_reply(wire)
    if code != 220:
        raise StartTlsRefused(f"the server's SMTP greeting was {code} {_quote(' '.join(lines))}, not 220")
    wire.send(f"EHLO {EHLO_NAME}\r\n".encode(), "EHLO")
    code, lines = smtp_reply(wire)
    if code != 250:
        raise StartTlsRefused(f"the server answered EHLO with {code} {_quote(' '.join(lines))}")
    if not any(line.split(" ")[0].upper() == "STARTTLS" for line in lines):
        raise StartTlsRefused("the server did not offer STARTTLS in its answer to EHLO")
    wire.send(b"STARTTLS\r\n", "STARTTLS")
    code, lines = smtp_reply(wire)
    if code != 220:
        raise StartTlsRefused(f"the server answered STARTTLS with {code} {_quote(' '.join(lines))}")


def _imap(wire: _Wire, host: str) -> None:
    greeting = wire.line()
    if not greeting.upper().startswith(("* OK", "* PREAUTH")):
        raise StartTlsRefused(f"the server's IMAP greeting was {_quote(greeting)}, not '* OK'")
    wire.send(b"a1 STARTTLS\r\n", "STARTTLS")
    while True:    # untagged lines ("* CAPABILITY ...") may come before our tagged answer
        line = wire.line()
        if line.startswith("a1 "):
            break
        if not line.startswith("* "):
            raise StartTlsRefused(f"the server's answer to STARTTLS is not IMAP: {_quote(line)}")
    if not line[3:].upper().startswith("OK"):
        raise StartTlsRefused(f"the server refused STARTTLS: {_quote(line)}")


def _pop3(wire: _Wire, host: str) -> None:
    greeting = wire.line()
    if not greeting.startswith("+OK"):
        raise StartTlsRefused(f"the server's POP3 greeting was {_quote(greeting)}, not '+OK'")
    wire.send(b"STLS\r\n", "STLS")
    answer = wire.line()
    if not answer.startswith("+OK"):
        raise StartTlsRefused(f"the server refused STLS (POP3's STARTTLS): {_quote(answer)}")


def ftp_reply(wire: _Wire) -> tuple[int, str]:
    """One FTP reply (RFC 959 4.2: `code-` opens a multi-line reply that `code ` closes)."""
    first = wire.line()
    if len(first) < 3 or not first[:3].isdigit():
        raise StartTlsRefused(f"the server's answer to {wire.step} is not FTP: {_quote(first)}")
    line = first
    if first[3:4] == "-":
        while not (line[:3] == first[:3] and line[3:4] == " "):
            line = wire.line()
    return int(first[:3]), first[4:]


def _ftp(wire: _Wire, host: str) -> None:
    code, text = ftp_reply(wire)
    if code != 220:
        raise StartTlsRefused(f"the server's FTP greeting was {code} {_quote(text)}, not 220")
    wire.send(b"AUTH TLS\r\n", "AUTH TLS")
    code, text = ftp_reply(wire)
    if code != 234:
        raise StartTlsRefused(f"the server refused AUTH TLS (FTP's STARTTLS): {code} {_quote(text)}")


def _xmpp(wire: _Wire, host: str) -> None:
    wire.send(XMPP_STREAM.format(host=_xml_attribute(host)).encode(), "the opening of our XMPP stream")
    features = wire.until_contains(b"</stream:features>", b"<stream:features/>", b"</stream:stream>",
                                   b"</stream:error>")
    if b"stream:error" in features or b"</stream:stream>" in features:
        raise StartTlsRefused(f"the server closed our XMPP stream for {host}: {_quote(_xmpp_error(features))}")
    if b"urn:ietf:params:xml:ns:xmpp-tls" not in features:
        raise StartTlsRefused("the server did not offer STARTTLS in its XMPP stream features")
    wire.send(XMPP_STARTTLS, "our <starttls/>")
    answer = wire.until_contains(b"/>", b"</failure>", b"</proceed>")   # <proceed/> or <proceed ...></proceed>
    if b"<proceed" not in answer:
        raise StartTlsRefused(f"the server refused XMPP STARTTLS: {_quote(answer.decode('utf-8', 'replace'))}")


def _ldap(wire: _Wire, host: str) -> None:
    wire.send(LDAP_STARTTLS, "the StartTLS extended operation")
    code = ldap_result_code(_ldap_message(wire))
    if code != 0:
        raise StartTlsRefused(f"the server refused the LDAP StartTLS operation (result code {code}, "
                              f"{_LDAP_RESULTS.get(code, 'see RFC 4511')})")


_LDAP_RESULTS = {2: "protocolError", 1: "operationsError", 52: "unavailable", 53: "unwillingToPerform"}


# Active Directory writes every BER length in the 4-octet long form (0x84 ...); the value stays bounded
# by MAX_PRELUDE_BYTES whatever its octets.
MAX_BER_LENGTH_OCTETS = 4


def _ldap_message(wire: _Wire) -> bytes:
    """One BER LDAPMessage (a SEQUENCE), whole."""
    head = wire.exactly(2)
    if head[0] != 0x30:
        raise StartTlsRefused(f"the server's answer to StartTLS is not LDAP (first byte {head[0]:#04x})")
    length, size_bytes = head[1], 0
    if length & 0x80:
        size_bytes = length & 0x7F
        if not 1 <= size_bytes <= MAX_BER_LENGTH_OCTETS:
            raise StartTlsRefused("the server's LDAP answer has an impossible length")
        length = int.from_bytes(wire.exactly(size_bytes), "big")
    if length > MAX_PRELUDE_BYTES:
        raise StartTlsRefused(f"the server's LDAP answer claims {length} bytes")
    return wire.exactly(length)


def ldap_result_code(body: bytes) -> int:
    """The resultCode of an ExtendedResponse ([APPLICATION 24]) inside an LDAPMessage's body."""
    elements = list(_ber_elements(body))
    if len(elements) < 2 or elements[1][0] != 0x78:
        raise StartTlsRefused("the server's answer to StartTLS is not an LDAP extended response")
    inner = list(_ber_elements(elements[1][1]))
    if not inner or inner[0][0] != 0x0A or len(inner[0][1]) != 1:
        raise StartTlsRefused("the server's LDAP extended response has no result code")
    return inner[0][1][0]


def _ber_elements(data: bytes):
    """(tag, value) of each BER element in `data` (definite lengths only, as LDAP requires)."""
    at = 0
    while at < len(data):
        if at + 2 > len(data):
            raise StartTlsRefused("the server's LDAP answer is truncated")
        tag, length = data[at], data[at + 1]
        at += 2
        if length & 0x80:
            size = length & 0x7F
            if not 1 <= size <= MAX_BER_LENGTH_OCTETS or at + size > len(data):
                raise StartTlsRefused("the server's LDAP answer has an impossible length")
            length = int.from_bytes(data[at:at + size], "big")
            at += size
        if at + length > len(data):
            raise StartTlsRefused("the server's LDAP answer is truncated")
        yield tag, data[at:at + length]
        at += length


def _postgres(wire: _Wire, host: str) -> None:
    wire.send(POSTGRES_SSL_REQUEST, "our SSLRequest")
    answer = wire.exactly(1)
    if answer == b"N":
        raise StartTlsRefused("the PostgreSQL server answered our SSLRequest with 'N': it has SSL turned off")
    if answer != b"S":
        raise StartTlsRefused(f"the server's answer to our SSLRequest is not PostgreSQL's 'S' or 'N' "
                              f"(first byte {answer[0]:#04x})")


def _xmpp_error(features: bytes) -> str:
    text = features.decode("utf-8", "replace")
    start = text.find("<stream:error>")
    return text[start:start + 200] if start >= 0 else text[-200:]


def _xml_attribute(value: str) -> str:
    return value.replace("&", "&amp;").replace("'", "&apos;").replace("<", "&lt;")


def _quote(text: str) -> str:
    """A server's words inside ours: short, one line, printable."""
    clean = "".join(ch if ch.isprintable() else "?" for ch in text.strip())
    return repr(clean if len(clean) <= 120 else clean[:117] + "...")


_DIALECTS = {
    "SMTP": _smtp,
    "IMAP": _imap,
    "POP3": _pop3,
    "FTP": _ftp,
    "XMPP": _xmpp,
    "LDAP": _ldap,
    "POSTGRES": _postgres,
}
