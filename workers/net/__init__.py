"""What every engine needs of the network before it measures anything: name resolution, the SSRF guard,
the pre-flight handshake (reach.py, with the STARTTLS preludes and the deadline sockets it uses) and the
errors that explain an unreachable target. A leaf: only the standard library and tlsaudit.domain, so the
web process, the load commands and the browser task import it without loading sslyze or Playwright."""
