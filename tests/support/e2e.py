"""The e2e browser's settings: where screenshots go, which Chromium, its window and its flags (tests/e2e/conftest.py
launches it; a test that opens its own context uses the same)."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = PROJECT_ROOT / "test-artifacts"
SCREENSHOTS = PROJECT_ROOT / "docs" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 800}
CHROMIUM_ARGS = [
    "--no-sandbox",  # required as root
    "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-domain-reliability", "--metrics-recording-only",
    "--disable-features=OptimizationHints,MediaRouter,Translate,NetworkTimeServiceQuerying",
]
