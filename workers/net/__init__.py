"""Name resolution, the SSRF guard and the error for unreachable targets, shared by the web apps and
the engines. A leaf: only the standard library and tlsaudit.domain, so the web process can import it
without loading sslyze or Playwright."""
