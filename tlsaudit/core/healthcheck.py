"""The container's health check: is this web process serving pages? (`python -m tlsaudit.core.healthcheck`)

/healthz answers "ok" while every page fails (static files missing, uploads unwritable), so the
check asks for what a user gets: the login page, rendered through every middleware, and the first
stylesheet it links. It asks as the TLS-terminating proxy in front would, with the first name in
ALLOWED_HOSTS and `X-Forwarded-Proto: https`, so production's host check and https redirect apply.
Standard library only: it runs every few seconds and must not start Django.
"""

from __future__ import annotations

import http.client
import os
import re
import sys

PORT = int(os.environ.get("TLSAUDIT_HEALTHCHECK_PORT") or 8000)
TIMEOUT = 5


def served_host() -> str:
    names = [n.strip() for n in (os.environ.get("ALLOWED_HOSTS") or "").split(",") if n.strip()]
    name = next((n for n in names if n != "*"), "localhost")
    return name.lstrip(".") or "localhost"


def fetch(path: str) -> tuple[int, str, str]:
    connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=TIMEOUT)
    try:
        connection.request("GET", path, headers={"Host": served_host(), "X-Forwarded-Proto": "https"})
        response = connection.getresponse()
        body = response.read(256 * 1024).decode("utf-8", "replace")
        return response.status, response.getheader("Location") or "", body
    finally:
        connection.close()


def problem() -> str | None:
    """None when the login page and its stylesheet are served; else what is wrong, in words."""
    status, location, body = fetch("/accounts/login/")
    if status in (301, 302) and location.startswith("https://"):
        return ("every page redirects to https://: SECURE_SSL_REDIRECT is on but BEHIND_TLS_PROXY is not, "
                "so X-Forwarded-Proto from the proxy in front is not trusted (set BEHIND_TLS_PROXY=1)")
    if status == 400:
        return f"the login page answered 400 for Host {served_host()!r}: is it in ALLOWED_HOSTS?"
    if status != 200:
        return f"the login page answered {status}"
    stylesheet = re.search(r'<link[^>]+href="(/[^"]+\.css)"', body)
    if not stylesheet:
        return "the login page links no stylesheet"
    status, _, _ = fetch(stylesheet.group(1))
    if status != 200:
        return f"the stylesheet {stylesheet.group(1)} answered {status} (static files not collected?)"
    return None


def main() -> int:
    try:
        reason = problem()
    except OSError as error:
        reason = f"no answer on port {PORT}: {error}"
    if reason:
        print(f"unhealthy: {reason}")
        return 1
    print("healthy: the login page and its stylesheet are served")
    return 0


if __name__ == "__main__":
    sys.exit(main())
