"""Why a target could not be reached, in words a site owner understands.

One class for every engine: `TargetError.code` is stable (the UI and the retry policy key on it),
`.message` is for people, `.detail` is the technical trace for support. The codes here are the ones
any engine can meet; workers/net/reach_errors.py and workers/browser/errors.py add their own and the
classifiers that turn their failures into a TargetError.
"""

from __future__ import annotations

INVALID_TARGET = "invalid_target"
DNS = "dns"
PRIVATE_TARGET = "private_target"
REFUSED = "refused"
TIMEOUT = "timeout"
CONNECTION_FAILED = "connection_failed"
TLS_HANDSHAKE_FAILED = "tls_handshake_failed"

# Worth retrying later: the network or the server may behave differently next time.
TRANSIENT_CODES = frozenset({DNS, TIMEOUT, CONNECTION_FAILED})


class TargetError(Exception):
    def __init__(self, code: str, message: str, detail: str = ""):
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = detail

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "detail": self.detail}

    @property
    def transient(self) -> bool:
        return self.code in TRANSIENT_CODES

    def __repr__(self) -> str:
        return f"TargetError({self.code!r}, {self.message!r})"
