"""What a connection to the server saw, named once for the pre-flight (reach.py), the wire diagnosis
(probes.diagnose_wire) and the messages built from both (errors.py), which all import it at top level.
"""

# The pre-flight handshake's outcomes (see reach.py's docstring for when each happens).
OK = "ok"
REFUSED = "refused"
CONNECT_TIMEOUT = "connect_timeout"
UNREACHABLE = "unreachable"
SILENT = "silent"
SLOW = "slow"
RESET = "reset"
CLOSED = "closed"
TLS_ERROR = "tls_error"
STARTTLS_REFUSED = "starttls_refused"   # a STARTTLS service answered its prelude with anything but a go-ahead
STARTTLS_STALLED = "starttls_stalled"   # ...or stopped answering it

# What our own wire diagnosis saw (see probes.diagnose_wire).
WIRE_SILENT = "silent"      # connected, the server never sent a byte
WIRE_HTTP = "http"          # answered our bytes with plain HTTP
WIRE_TLS = "tls"            # answered with a TLS record (alert or handshake)
WIRE_OTHER = "other"        # answered with something else (SSH banner, SMTP greeting...)
WIRE_SSL2 = "ssl2"          # answered with an SSL 2.0 record (only sslyze can speak it)
WIRE_CLOSED = "closed"      # closed the connection without a byte
WIRE_REFUSED = "refused"
WIRE_UNREACHABLE = "unreachable"
