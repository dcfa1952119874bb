"""The custom CA's limits (#30 item 13) hold in the dashboard's form as in the API, and a CA stored
before they existed cannot make a browser probe build a trust store for minutes."""

import datetime
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.urls import reverse

from tests.test_orgs import private_ca_pem
from tlsaudit.domain import customca
from workers.browser.chromium import write_nss_db
from workers.browser.errors import CUSTOM_CA
from workers.net.errors import TargetError


def leaf_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "www.agency-a.test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=90))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


ROOT = private_ca_pem()
# 4,500 copies of one root: the 2 MB PEM the attack saved (what certutil is run on, one at a time).
BOMB = "\n".join([ROOT] * 4500)


def post_settings(client, org, pem: str):
    return client.post(reverse("orgs:settings", args=[org.slug]), {"name": org.name, "custom_ca_pem": pem})


@pytest.mark.django_db
@pytest.mark.parametrize("pem, words", [
    (BOMB, "at most 200,000 are accepted"),
    ("\n".join([ROOT] * (customca.MAX_CERTIFICATES + 1)), "holds 101 certificates; at most 100"),
    (leaf_pem(), "Only CA certificates can be trusted: CN=www.agency-a.test is not a CA"),
], ids=["too-large", "too-many", "not-a-ca"])   # the PEMs are made at collection: each process makes its own
def test_the_form_refuses_what_the_api_refuses_and_keeps_the_old_ca(login, alice, org_a, api, pem, words):
    org_a.custom_ca_pem = ROOT
    org_a.save()
    response = post_settings(login(alice), org_a, pem)
    assert response.status_code == 200 and words in response.content.decode()
    api_response = api.put("/api/v1/organization/custom-ca/", {"pem": pem}, format="json")
    assert api_response.status_code == 422, api_response.content
    org_a.refresh_from_db()
    assert org_a.custom_ca_pem == ROOT


@pytest.mark.django_db
def test_a_hundred_ca_certificates_are_accepted(login, alice, org_a):
    roots = [private_ca_pem(f"root {i}") for i in range(customca.MAX_CERTIFICATES)]
    assert post_settings(login(alice), org_a, "\n".join(roots)).status_code == 302
    org_a.refresh_from_db()
    assert len(x509.load_pem_x509_certificates(org_a.custom_ca_pem.encode())) == 100


def test_a_ca_stored_before_the_limits_is_refused_at_once_with_the_fix(tmp_path):
    started = time.monotonic()
    with pytest.raises(TargetError) as caught:
        write_nss_db(tmp_path, BOMB)
    assert time.monotonic() - started < 2
    assert caught.value.code == CUSTOM_CA
    assert "holds 4,500 certificates" in caught.value.message and "organization's settings" in caught.value.message
    assert not (tmp_path / ".pki").exists()   # no certutil ran


def test_the_trust_store_is_built_within_its_budget_or_not_at_all(tmp_path):
    roots = "\n".join(private_ca_pem(f"root {i}") for i in range(30))
    with pytest.raises(TargetError, match="took too long to build; the probe was not started"):
        write_nss_db(tmp_path / "short", roots, budget_s=0.2)
    write_nss_db(tmp_path / "enough", roots)
    assert (tmp_path / "enough" / ".pki" / "nssdb" / "cert9.db").exists()


@pytest.mark.django_db
def test_a_ca_file_can_be_uploaded_and_the_page_lists_what_the_organization_trusts(login, alice, org_a):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = login(alice)
    url = reverse("orgs:settings", args=[org_a.slug])
    assert 'data-testid="no-trusted-cas"' in client.get(url).content.decode()
    second = private_ca_pem("Agency A second root")
    response = client.post(url, {"name": org_a.name, "custom_ca_pem": ROOT,
                                 "custom_ca_file": SimpleUploadedFile("root.crt", second.encode())})
    assert response.status_code == 302
    page = client.get(url).content.decode()
    assert "CN=Agency A internal root" in page and "CN=Agency A second root" in page
    assert 'data-testid="trusted-cas"' in page
    # a leaf in the file is refused like one pasted, and nothing changes
    refused = client.post(url, {"name": org_a.name, "custom_ca_pem": "",
                                "custom_ca_file": SimpleUploadedFile("leaf.pem", leaf_pem().encode())})
    assert refused.status_code == 200 and "Only CA certificates can be trusted" in refused.content.decode()
    binary = client.post(url, {"name": org_a.name, "custom_ca_pem": "",
                               "custom_ca_file": SimpleUploadedFile("root.der", b"\x30\x82\x01\xff\x80")})
    assert "This file is not PEM text" in binary.content.decode()
    org_a.refresh_from_db()
    assert org_a.custom_ca_pem.count("BEGIN CERTIFICATE") == 2
