"""Real TLS services on 127.0.0.1 for the STARTTLS tests (#18 item 3): aiosmtpd (SMTP with STARTTLS,
and SMTPS), and private instances of Debian's dovecot, vsftpd, prosody, slapd and a PostgreSQL
cluster of our own (tests/support/daemons.py), all with one leaf of our test CA.

`service_ports` maps each scheme of domain/services.py but https to the port serving it.
"""

from __future__ import annotations

import ssl
from contextlib import ExitStack

import pytest
from aiosmtpd.controller import Controller

from tests.support import daemons
from tests.support.pki import TestPki


@pytest.fixture(scope="session")
def service_pki(tmp_path_factory) -> TestPki:
    return TestPki(tmp_path_factory.mktemp("starttls-pki"))


@pytest.fixture(scope="session")
def service_tls(service_pki) -> daemons.TlsFiles:
    leaf = service_pki.issue_leaf("service", dns_names=("localhost",), ip_addresses=("127.0.0.1",))
    return daemons.TlsFiles(cert=leaf.cert, chain=leaf.fullchain, key=leaf.key)


def server_context(tls: daemons.TlsFiles) -> ssl.SSLContext:
    """TLS 1.2 with the two suites of daemons.TLS12_SUITES, and TLS 1.3: what every daemon offers."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(daemons.TLS12_SUITES)
    context.load_cert_chain(tls.chain, tls.key)
    return context


class _Accepting:
    async def handle_DATA(self, server, session, envelope):
        return "250 OK"


@pytest.fixture(scope="session")
def smtp_servers(service_tls):
    """aiosmtpd with STARTTLS on one port, implicit TLS (SMTPS) on another."""
    starttls = Controller(_Accepting(), hostname="127.0.0.1", port=daemons.free_port(),
                          tls_context=server_context(service_tls), require_starttls=True)
    implicit = Controller(_Accepting(), hostname="127.0.0.1", port=daemons.free_port(),
                          ssl_context=server_context(service_tls))
    starttls.start()
    implicit.start()
    try:
        yield {"smtp": starttls.port, "smtps": implicit.port}
    finally:
        starttls.stop()
        implicit.stop()


@pytest.fixture(scope="session")
def service_ports(tmp_path_factory, service_tls, smtp_servers):
    """Every service of the daemons, started once for the session."""
    base = tmp_path_factory.mktemp("daemons")
    with ExitStack() as stack:
        mail = stack.enter_context(daemons.dovecot(base / "dovecot", service_tls))
        directory = stack.enter_context(daemons.slapd(base / "slapd", service_tls))
        ports = {
            **smtp_servers, **mail, **directory,
            "ftp": stack.enter_context(daemons.vsftpd(base / "vsftpd", service_tls)),
            "xmpp": stack.enter_context(daemons.prosody(base / "prosody", service_tls)),
            "postgres": stack.enter_context(daemons.postgres(base / "postgres", service_tls)),
        }
        yield ports
