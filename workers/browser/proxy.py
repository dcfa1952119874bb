"""The guarded browser's only way out: a SOCKS5 proxy in this process that connects where the guard says.

A guarded probe opens its browser contexts with `proxy=socks5://127.0.0.1:<port>` and bypass list
`<-loopback>` (which removes Chromium's built-in "never proxy localhost" rule). With SOCKS5 Chromium
resolves nothing itself: it sends the host *name* and port of every connection (document, image,
script, fetch, WebSocket, redirect hop) to the proxy, which

1. asks the probe's AddressGuard for the checked address of that name (resolved once per probe,
   every address checked with tlsaudit.domain.netguard; pinned hosts map to their pinned IP),
2. refuses (SOCKS reply 0x02, "not allowed by ruleset") a host that resolves to any non-public
   address, noting host, port and reason in `refusals`,
3. else connects to exactly that checked address and relays bytes both ways untouched (TLS stays
   end to end between Chromium and the server; the proxy never sees plaintext).

Cost: every byte crosses this process once more (an asyncio relay on loopback, well under a
millisecond per round trip), and Navigation Timing's connect phase includes the SOCKS exchange.
Only guarded probes (production: private targets not allowed) use it; see docs/decisions.md.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
from contextlib import suppress

import uvloop

from workers.net.errors import PRIVATE_TARGET, TargetError

SOCKS_VERSION = 5
NO_AUTH = 0
CONNECT = 1
ATYP_IPV4, ATYP_DOMAIN, ATYP_IPV6 = 1, 3, 4
REPLY_OK, REPLY_FAILURE, REPLY_NOT_ALLOWED, REPLY_HOST_UNREACHABLE, REPLY_REFUSED = 0, 1, 2, 4, 5
REPLY_COMMAND_NOT_SUPPORTED = 7
RELAY_CHUNK = 65536
# What an upstream failure would have been without the proxy (Chromium only says ERR_SOCKS_...).
NET_ERRORS = {"refused": "ERR_CONNECTION_REFUSED", "timeout": "ERR_CONNECTION_TIMED_OUT",
              "unreachable": "ERR_ADDRESS_UNREACHABLE", "dns": "ERR_NAME_NOT_RESOLVED"}


class NegotiationError(Exception):
    pass


class GuardedProxy:
    """A SOCKS5 CONNECT proxy on 127.0.0.1 with its own event loop thread; `close()` ends every relay."""

    def __init__(self, guard, connect_timeout_s: float = 10.0):
        self.guard = guard
        self.connect_timeout_s = connect_timeout_s
        self.refusals: list[dict] = []                      # {"host", "port", "reason"}, in order
        self.failures: dict[tuple[str, int], str] = {}      # (host, port) -> refused/timeout/unreachable/dns
        self.connections: list[tuple[str, int, str]] = []   # (host, port, address connected to)
        self._tasks: set[asyncio.Task] = set()
        self._loop = uvloop.new_event_loop()  # the relay's per-chunk cost lands in the measured timings
        self._thread = threading.Thread(target=self._loop.run_forever, name="probe-proxy", daemon=True)
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def playwright_proxy(self) -> dict:
        return {"server": f"socks5://127.0.0.1:{self.port}", "bypass": "<-loopback>"}

    def net_error_for(self, host: str, port: int) -> str | None:
        """The net::ERR_ name Chromium would have shown for the last failed connection to host:port."""
        return NET_ERRORS.get(self.failures.get((host.lower(), port), ""))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        with suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _shutdown(self) -> None:
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def __enter__(self) -> GuardedProxy:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- one client connection ----------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        upstream = None
        try:
            host, port = await negotiate(reader, writer)
            upstream = await self._open_upstream(host, port, writer)
            if upstream is not None:
                await relay(reader, writer, *upstream)
        except (NegotiationError, asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            pass  # close(): end quietly (asyncio's server callback logs a handler that ends cancelled)
        finally:
            for stream in (writer, upstream[1] if upstream else None):
                if stream is not None:
                    stream.close()
            self._tasks.discard(task)

    async def _open_upstream(self, host: str, port: int, writer):
        """Check `host`, connect to its checked address, answer the SOCKS request; None when refused."""
        key = (host.lower(), port)
        try:
            # Pinned, literal or already resolved: decide on this thread; a DNS lookup goes to the pool.
            address = self.guard.checked_address(host, may_look_up=False) or \
                await self._loop.run_in_executor(None, self.guard.checked_address, host)
        except TargetError as exc:
            if exc.code == PRIVATE_TARGET:
                self.refusals.append({"host": host, "port": port, "reason": exc.message})
                await answer(writer, REPLY_NOT_ALLOWED)
            else:
                self.failures[key] = "dns"
                await answer(writer, REPLY_HOST_UNREACHABLE)
            return None
        try:
            upstream = await asyncio.wait_for(asyncio.open_connection(address, port), self.connect_timeout_s)
        except ConnectionRefusedError:
            return await self._failed(key, "refused", REPLY_REFUSED, writer)
        except (asyncio.TimeoutError, TimeoutError):
            return await self._failed(key, "timeout", REPLY_HOST_UNREACHABLE, writer)
        except OSError:
            return await self._failed(key, "unreachable", REPLY_HOST_UNREACHABLE, writer)
        self.connections.append((host, port, address))
        self.failures.pop(key, None)
        await answer(writer, REPLY_OK)
        return upstream

    async def _failed(self, key, what: str, reply: int, writer) -> None:
        self.failures[key] = what
        await answer(writer, reply)
        return None


async def negotiate(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> tuple[str, int]:
    """RFC 1928: greeting (no authentication), then a CONNECT request; the requested host and port."""
    version, count = await reader.readexactly(2)
    methods = await reader.readexactly(count)
    if version != SOCKS_VERSION or NO_AUTH not in methods:
        writer.write(bytes([SOCKS_VERSION, 0xFF]))
        raise NegotiationError("not SOCKS5 without authentication")
    writer.write(bytes([SOCKS_VERSION, NO_AUTH]))
    version, command, _, atyp = await reader.readexactly(4)
    if atyp == ATYP_IPV4:
        host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
    elif atyp == ATYP_IPV6:
        host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
    elif atyp == ATYP_DOMAIN:
        length = (await reader.readexactly(1))[0]
        host = (await reader.readexactly(length)).decode("idna")
    else:
        raise NegotiationError(f"address type {atyp}")
    port = int.from_bytes(await reader.readexactly(2), "big")
    if command != CONNECT:
        await answer(writer, REPLY_COMMAND_NOT_SUPPORTED)
        raise NegotiationError(f"command {command}")
    return host, port


async def answer(writer: asyncio.StreamWriter, reply: int) -> None:
    # BND.ADDR 0.0.0.0:0 in the SOCKS reply (RFC 1928 lets a proxy not disclose it); nothing binds to it.
    writer.write(bytes([SOCKS_VERSION, reply, 0, ATYP_IPV4]) + socket.inet_aton("0.0.0.0") + b"\0\0")  # nosec B104
    await writer.drain()


async def relay(reader, writer, upstream_reader, upstream_writer) -> None:
    """Copy both ways until both sides have finished (a half-close is passed on)."""
    await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer), return_exceptions=True)


async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(RELAY_CHUNK):
            sink.write(data)
            await sink.drain()
    finally:
        with suppress(OSError, RuntimeError):
            if sink.can_write_eof():
                sink.write_eof()
