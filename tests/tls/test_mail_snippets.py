"""The Dovecot snippet a mail service's report shows (#18 item 3), read by Debian's own doveconf: every
setting it names must exist in Dovecot 2.3 and the file must parse. doveconf -n checks names, syntax
and the files named with `<`, not the values (a TLS version it does not know still passes), so the
values are checked by tests/domain/test_service_grading.py."""

import subprocess

import pytest

from tlsaudit.domain.mozilla import PROFILE_NAMES, get_profile
from tlsaudit.domain.snippets import _dovecot


@pytest.fixture(scope="module")
def dh_file(tmp_path_factory):
    # A DSA-style group is generated in a second; doveconf -n only needs the file to exist.
    path = tmp_path_factory.mktemp("dh") / "dhparam.pem"
    subprocess.run(["openssl", "dhparam", "-dsaparam", "-out", str(path), "1024"], check=True,
                   capture_output=True, timeout=60)
    return path


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_doveconf_reads_the_dovecot_snippet_of_each_profile(profile, test_pki, dh_file, tmp_path):
    text = (_dovecot(get_profile(profile), []).replace("/path/to/signed_cert_plus_intermediates",
                                                       str(test_pki.chain_file))
            .replace("/path/to/private_key", str(test_pki.key_file)).replace("/path/to/dhparam", str(dh_file)))
    config = tmp_path / "dovecot.conf"
    config.write_text(text)

    run = subprocess.run(["doveconf", "-c", str(config), "-n"], capture_output=True, text=True, timeout=30)

    assert run.returncode == 0, run.stderr
    assert "ssl = required" in run.stdout
    assert f"ssl_cipher_suites = {':'.join(get_profile(profile).ciphersuites)}" in run.stdout
