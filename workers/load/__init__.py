"""Load engines: the ab-style HTTP(S) load generator and the TLS handshake timer.

Entry points: workers.load.client.run_load(LoadSpec) and workers.load.handshake.run_handshakes(HandshakeSpec).
"""
