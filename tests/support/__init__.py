"""Test support shared by the test suites: a private PKI and a lab of local nginx TLS servers."""
