"""Cipher suite classification, one suite per row."""

from __future__ import annotations

import pytest

from tests.domain.factories import suite
from tlsaudit.domain.ciphers import classify, nominal_bits, rsa_equivalent_bits, strength_label
from tlsaudit.domain.scanfacts import CipherSuite

# name, kx, auth, cipher, bits, security bits, flags that are True (the others must be False)
CLASSIFICATION = [
    ("TLS_AES_128_GCM_SHA256", "TLS13", "TLS13", "AES-GCM", 128, 128, {"aead", "fs"}),
    ("TLS_AES_128_CCM_8_SHA256", "TLS13", "TLS13", "AES-CCM", 128, 128, {"aead", "fs"}),
    ("TLS_CHACHA20_POLY1305_SHA256", "TLS13", "TLS13", "CHACHA20", 256, 256, {"aead", "fs"}),
    ("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE", "RSA", "AES-GCM", 256, 256, {"aead", "fs"}),
    ("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE", "ECDSA", "AES", 128, 128, {"cbc", "fs"}),
    ("TLS_DHE_DSS_WITH_CAMELLIA_256_CBC_SHA", "DHE", "DSS", "CAMELLIA", 256, 256, {"cbc", "fs"}),
    ("TLS_DHE_RSA_WITH_ARIA_128_GCM_SHA256", "DHE", "RSA", "ARIA-GCM", 128, 128, {"aead", "fs"}),
    ("TLS_RSA_WITH_AES_128_GCM_SHA256", "RSA", "RSA", "AES-GCM", 128, 128, {"aead"}),
    ("TLS_RSA_WITH_3DES_EDE_CBC_SHA", "RSA", "RSA", "3DES", 168, 112, {"cbc", "64bit"}),
    ("TLS_RSA_WITH_IDEA_CBC_SHA", "RSA", "RSA", "IDEA", 128, 128, {"cbc", "64bit"}),
    ("TLS_RSA_WITH_SEED_CBC_SHA", "RSA", "RSA", "SEED", 128, 128, {"cbc"}),
    ("TLS_RSA_WITH_DES_CBC_SHA", "RSA", "RSA", "DES", 56, 56, {"cbc", "64bit"}),
    ("TLS_RSA_WITH_RC4_128_SHA", "RSA", "RSA", "RC4", 128, 128, {"rc4"}),
    ("TLS_RSA_WITH_NULL_SHA256", "RSA", "RSA", "NULL", 0, 0, {"null"}),
    ("TLS_RSA_EXPORT_WITH_RC4_40_MD5", "RSA", "RSA", "RC4", 40, 40, {"export", "rc4"}),
    ("TLS_RSA_EXPORT_WITH_RC2_CBC_40_MD5", "RSA", "RSA", "RC2", 40, 40, {"export", "cbc", "64bit"}),
    ("TLS_RSA_EXPORT1024_WITH_DES_CBC_SHA", "RSA", "RSA", "DES", 56, 56, {"export", "cbc", "64bit"}),
    ("TLS_DHE_RSA_EXPORT_WITH_DES40_CBC_SHA", "DHE", "RSA", "DES", 40, 40, {"export", "cbc", "64bit", "fs"}),
    ("TLS_DH_anon_WITH_AES_128_GCM_SHA256", "anon", "anon", "AES-GCM", 128, 128, {"aead", "anon"}),
    ("TLS_ECDH_anon_WITH_NULL_SHA", "anon", "anon", "NULL", 0, 0, {"null", "anon"}),
    ("TLS_ECDH_RSA_WITH_AES_128_CBC_SHA", "ECDH", "RSA", "AES", 128, 128, {"cbc"}),
    ("TLS_DH_DSS_WITH_AES_256_GCM_SHA384", "DH", "DSS", "AES-GCM", 256, 256, {"aead"}),
    ("TLS_PSK_WITH_AES_128_CBC_SHA", "PSK", "PSK", "AES", 128, 128, {"cbc"}),
    ("TLS_RSA_PSK_WITH_AES_256_CBC_SHA", "RSA", "PSK", "AES", 256, 256, {"cbc"}),
    ("TLS_SRP_SHA_RSA_WITH_AES_128_CBC_SHA", "SRP", "RSA", "AES", 128, 128, {"cbc"}),
    ("TLS_KRB5_WITH_3DES_EDE_CBC_SHA", "KRB5", "KRB5", "3DES", 168, 112, {"cbc", "64bit"}),
    ("TLS_GOSTR341001_WITH_28147_CNT_IMIT", "GOST", "GOST", "GOST", 256, 256, set()),
    ("SSL_CK_DES_192_EDE3_CBC_WITH_MD5", "RSA", "RSA", "3DES", 168, 112, {"cbc", "64bit"}),
    ("SSL_CK_RC4_128_EXPORT40_WITH_MD5", "RSA", "RSA", "RC4", 40, 40, {"export", "rc4"}),
    ("SSL_CK_RC2_128_CBC_WITH_MD5", "RSA", "RSA", "RC2", 128, 128, {"cbc", "64bit"}),
    ("OLD_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE", "RSA", "CHACHA20", 256, 256, {"aead", "fs"}),
    ("RSA_WITH_AES_256_CCM_8", "RSA", "RSA", "AES-CCM", 256, 256, {"aead"}),
]
FLAGS = {"aead": "is_aead", "cbc": "is_cbc", "fs": "is_forward_secret", "export": "is_export", "rc4": "is_rc4",
         "null": "is_null", "anon": "is_anonymous", "64bit": "is_64bit_block"}


@pytest.mark.parametrize("name, kx, auth, cipher, bits, security_bits, flags", CLASSIFICATION,
                         ids=[row[0] for row in CLASSIFICATION])
def test_it_classifies_a_suite_from_its_name(name, kx, auth, cipher, bits, security_bits, flags):
    info = classify(suite(name))

    assert (info.kx, info.auth, info.cipher) == (kx, auth, cipher)
    assert (info.bits, info.grading_bits, info.security_bits) == (bits, bits, security_bits)
    assert {flag for flag, attr in FLAGS.items() if getattr(info, attr)} == flags


def test_3des_counts_168_bits_for_the_score_but_112_for_security():
    info = classify(suite("TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", key_size=112))

    assert (info.grading_bits, info.security_bits) == (168, 112)


def test_the_name_beats_a_wrong_reported_key_size():
    # sslyze 6.3.1 reports these two suites with the wrong key size.
    assert classify(CipherSuite("TLS_DHE_RSA_WITH_ARIA_128_GCM_SHA256", "", "TLSv1.2", 256)).bits == 128
    assert nominal_bits("TLS_RSA_WITH_AES_256_CCM_8", 128) == 256


def test_an_unknown_suite_is_labelled_not_rejected():
    info = classify(CipherSuite("TLS_FUTURE_WITH_SHINY_CIPHER", "", "TLSv1.2", 192))

    assert (info.kx, info.cipher, info.bits) == ("UNKNOWN", "UNKNOWN", 192)
    assert not (info.is_aead or info.is_forward_secret)


def test_it_knows_every_suite_sslyze_can_report():
    from sslyze.plugins.openssl_cipher_suites.cipher_suites import CipherSuitesRepository
    from sslyze.server_connectivity import TlsVersionEnum

    names = {s.name for version in TlsVersionEnum for s in CipherSuitesRepository.get_all_cipher_suites(version)}
    infos = [classify(CipherSuite(name, "", "TLSv1.2", 0)) for name in names]
    unknown = {i.name for i in infos if "UNKNOWN" in (i.kx, i.auth, i.cipher, i.mac)}

    assert len(names) > 150
    assert unknown == set()


@pytest.mark.parametrize("key_type, bits, rsa_bits", [
    ("RSA", 2048, 2048), ("DSA", 1024, 1024), ("DH", 1024, 1024),
    ("EC", 160, 1024), ("EC", 224, 2048), ("EC", 253, 3072), ("EC", 256, 3072), ("ECDH", 384, 7680),
    ("EC", 521, 15360), ("EC", 112, 512), ("Ed25519", 256, 3072), ("X25519", 253, 3072),
    ("Ed448", 456, 7680), ("X448", 448, 7680),
])
def test_it_converts_keys_to_rsa_equivalent_bits(key_type, bits, rsa_bits):
    assert rsa_equivalent_bits(key_type, bits) == rsa_bits


@pytest.mark.parametrize("kx_bits, curve, rsa_bits", [(253, None, 3072), (256, "prime256v1", 3072),
                                                      (384, "secp384r1", 7680)])
def test_it_reads_the_ephemeral_ecdh_strength(kx_bits, curve, rsa_bits):
    info = classify(suite("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=kx_bits, curve=curve))

    assert info.kx_rsa_bits == rsa_bits


def test_it_reads_the_ephemeral_dh_strength_and_admits_when_it_is_missing():
    assert classify(suite("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=1024)).kx_rsa_bits == 1024
    assert classify(suite("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", kx_bits=None)).kx_rsa_bits is None
    assert classify(suite("TLS_RSA_WITH_AES_128_GCM_SHA256")).kx_rsa_bits is None


@pytest.mark.parametrize("name, kx_bits, label", [
    ("TLS_AES_256_GCM_SHA384", 253, "strong"),
    ("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", 253, "strong"),
    ("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", 2048, "strong"),
    ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", 253, "acceptable"),
    ("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", 1024, "weak"),
    ("TLS_RSA_WITH_AES_128_GCM_SHA256", None, "weak"),
    ("TLS_RSA_WITH_AES_256_CBC_SHA", None, "weak"),
    ("TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", 253, "weak"),
    ("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", 768, "insecure"),
    ("TLS_ECDHE_RSA_WITH_RC4_128_SHA", 253, "insecure"),
    ("TLS_RSA_WITH_DES_CBC_SHA", None, "insecure"),
    ("TLS_ECDHE_RSA_WITH_NULL_SHA", 253, "insecure"),
    ("TLS_RSA_EXPORT_WITH_DES40_CBC_SHA", None, "insecure"),
    ("TLS_DH_anon_WITH_AES_256_GCM_SHA384", 2048, "insecure"),
])
def test_it_labels_strength_for_the_ui(name, kx_bits, label):
    assert strength_label(classify(suite(name, kx_bits=kx_bits))) == label
