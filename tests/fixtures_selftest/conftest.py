"""Selftests of the TLS lab: make `tests.support` importable and expose its fixtures here."""

import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
if str(PROJECT_ROOT) not in sys.path:  # until tests/__init__.py and the top-level conftest exist
    sys.path.insert(0, str(PROJECT_ROOT))

from tests.support.tls_servers import *  # noqa: E402,F401,F403  (the lead re-exports the same way)
