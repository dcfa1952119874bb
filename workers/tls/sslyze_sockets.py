"""sslyze's connections under our deadline (workers/net/deadline.py).

sslyze 6 opens every connection of a scan, its connectivity test included, through one function,
`sslyze.connection_helpers.tls_connection._open_socket_for_direct_connection(server_location,
network_timeout)`, and nassl then reads and writes that Python socket object (`sock.recv`,
`sock.send`). We replace that function once per process: for a server location registered by
`bounded(location, deadline)` the socket comes from `deadline.connect`, so each of sslyze's reads gets
the time left to its connection and to the scan, and a connection asked for after the deadline
fails at once; for any other location sslyze's own function runs. A location is matched by
identity: sslyze passes the object of the ServerScanRequest along, and two scans of the same
address never share their deadline.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from sslyze.connection_helpers import tls_connection

from workers.net.deadline import Deadline

_HOOKED = "_open_socket_for_direct_connection"
_sslyze_open_socket = getattr(tls_connection, _HOOKED)   # AttributeError on an sslyze that moved it: loud
_bounded: dict[int, tuple[object, Deadline]] = {}
_lock = threading.Lock()


def _open_socket(server_location, network_timeout):
    entry = _bounded.get(id(server_location))
    if entry is None or entry[0] is not server_location:
        return _sslyze_open_socket(server_location, network_timeout)
    return entry[1].connect(server_location.ip_address, server_location.port, network_timeout)


def install() -> None:
    """Idempotent: route sslyze's direct connections through `_open_socket`."""
    if getattr(tls_connection, _HOOKED) is not _open_socket:
        setattr(tls_connection, _HOOKED, _open_socket)


@contextmanager
def bounded(server_location, deadline: Deadline):
    """While inside, every socket sslyze opens for `server_location` obeys `deadline`; on the way
    out, any of them sslyze left open is closed."""
    install()
    with _lock:
        _bounded[id(server_location)] = (server_location, deadline)
    try:
        yield deadline
    finally:
        with _lock:
            _bounded.pop(id(server_location), None)
        deadline.close_sockets()

