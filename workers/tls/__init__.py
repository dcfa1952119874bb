"""The TLS scan engine (sslyze + our own probes). Entry point: workers.tls.engine.run_scan."""
