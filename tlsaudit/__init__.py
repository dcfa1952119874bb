"""TLS Audit: HTTPS audits, grades and the cost of TLS, for site owners and agencies."""
