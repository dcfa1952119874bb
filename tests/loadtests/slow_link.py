"""A minimal slow link for the signed-overhead tests: a TCP proxy on 127.0.0.1 that holds every chunk
for `delay_s` in each direction (order kept), so a server behind it answers one round trip of
2 x delay_s later. Private to these tests; the latency lab of tests/support replaces it at merge."""

from __future__ import annotations

import asyncio
import threading


class SlowLink:
    """`with SlowLink(upstream_port, delay_s) as link:` connect to link.port instead of upstream_port."""

    def __init__(self, upstream_port: int, delay_s: float):
        self.upstream_port, self.delay_s = upstream_port, delay_s
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self.serve, name=f"slow-link-{upstream_port}", daemon=True)
        self.port = 0

    def __enter__(self) -> "SlowLink":
        self.thread.start()
        if not self.ready.wait(10):
            raise RuntimeError("the slow link did not start")
        return self

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self.relay, "127.0.0.1", 0, backlog=1024))
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        try:
            self.loop.run_forever()
        finally:
            server.close()
            self.loop.close()

    async def relay(self, client_reader, client_writer) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(self.pipe(client_reader, upstream_writer), self.pipe(upstream_reader, client_writer),
                             return_exceptions=True)

    async def pipe(self, reader, writer) -> None:
        """Chunks leave delay_s after they arrived, in order; the end of the stream too."""
        queue: asyncio.Queue = asyncio.Queue()

        async def deliver():
            while True:
                due, chunk = await queue.get()
                await asyncio.sleep(max(0.0, due - self.loop.time()))
                if chunk is None:
                    break
                writer.write(chunk)
                await writer.drain()
            writer.close()

        sender = asyncio.ensure_future(deliver())
        try:
            while chunk := await reader.read(65536):
                queue.put_nowait((self.loop.time() + self.delay_s, chunk))
        except OSError:
            pass
        queue.put_nowait((self.loop.time() + self.delay_s, None))
        try:
            await sender
        except OSError:
            pass
