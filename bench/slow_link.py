"""A TCP proxy on 127.0.0.1 that puts a round-trip time between a client and a local server.

Each chunk is forwarded RTT/2 after it arrived, in order, in both directions. A proxy cannot delay
the client's TCP handshake (the kernel completes it before accept()), so the first chunk a client
sends on a connection waits one more RTT: the server sees it when it would behind a real link
(SYN, SYN-ACK, then data: 1.5 RTT after connect()), and every exchange after that costs one RTT.
No bandwidth limit, no loss. Used by bench/audit_budget.py.

    with slow_link(server_port, rtt_s=0.150) as port:
        ...  # connect to 127.0.0.1:port
"""

from __future__ import annotations

import asyncio
import threading
import time
from contextlib import contextmanager

IP = "127.0.0.1"


async def _pipe(reader, writer, delay_s: float, first_extra_s: float) -> None:
    queue: asyncio.Queue = asyncio.Queue()

    async def deliver():
        while True:
            due, chunk = await queue.get()
            if chunk is None:
                break
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            writer.write(chunk)
            await writer.drain()
        writer.close()

    sender = asyncio.ensure_future(deliver())
    extra = first_extra_s
    try:
        while chunk := await reader.read(65536):
            queue.put_nowait((time.monotonic() + delay_s + extra, chunk))
            extra = 0.0
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((time.monotonic() + delay_s, None))
    try:
        await sender
    except (ConnectionError, OSError):
        pass


@contextmanager
def slow_link(server_port: int, rtt_s: float, server_ip: str = IP):
    """Yields the proxy's port; every connection to it reaches server_ip:server_port `rtt_s` away."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder = {}

    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(server_ip, server_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, server_writer, rtt_s / 2, rtt_s),
                             _pipe(server_reader, client_writer, rtt_s / 2, 0.0), return_exceptions=True)

    async def start():
        holder["server"] = await asyncio.start_server(handle, IP, 0, backlog=512)
        ready.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True)
    thread.start()
    ready.wait(10)
    async def shutdown():
        holder["server"].close()
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    try:
        yield holder["server"].sockets[0].getsockname()[1]
    finally:
        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
