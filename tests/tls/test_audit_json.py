"""Issue #18 item 6: `manage.py audit --json` carries the whole report, and every real run
validates against the published schema docs/audit-report.schema.json."""

import json
import os
from pathlib import Path

import jsonschema
import pytest

from tests.test_audit_cli import SERVICE_VARIABLES, AuditCli

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "audit-report.schema.json").read_text())
# The list of what the JSON must carry -> where it is.
SECTIONS = ("protocol_support", "cipher_suites", "key_exchange_groups", "certificates", "alpn", "resumption",
            "hsts", "vulnerabilities", "client_simulation", "post_quantum", "mozilla", "recommendations", "snippets")


def validate(document: dict) -> None:
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(document)


@pytest.fixture
def audit_cli(tmp_path) -> AuditCli:
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
    database = tmp_path / "never-created.sqlite3"
    env.update(TLSAUDIT_DEV="1", TLSAUDIT_ALLOW_PRIVATE_TARGETS="1", DATABASE_URL=f"sqlite:///{database}",
               TLSAUDIT_VAR_DIR=str(tmp_path / "var"), PYTHONWARNINGS="ignore")
    return AuditCli(env, database, tmp_path / "var")


def run_json(audit_cli, port: int, ca_file) -> dict:
    run = audit_cli(f"localhost:{port}", "--ip", "127.0.0.1", "--ca-file", str(ca_file), "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    return run.json


def test_the_json_of_a_server_preferring_x25519mlkem768_says_so_and_matches_the_schema(audit_cli, go_tls_server,
                                                                                       test_pki):
    report = run_json(audit_cli, go_tls_server(hsts="max-age=63072000"), test_pki.root_file)
    validate(report)
    assert set(SECTIONS) <= set(report)
    pq = report["post_quantum"]
    assert (pq["ready"], pq["prefers_pq"], pq["browser_choice"]) == (True, True, "X25519MLKEM768")
    assert pq["accepted"] == ["X25519MLKEM768", "SecP256r1MLKEM768", "SecP384r1MLKEM1024"]
    tls13 = report["cipher_suites"]["TLSv1.3"]
    assert tls13["server_order"] is not None and len(tls13["suites"]) == 3
    (deployment,) = report["certificates"]
    assert deployment["chain"][1]["subject"].startswith("CN=TLS Audit Test Intermediate")
    assert {t["store"]: t["trusted"] for t in deployment["trust"]}["Custom CA"] is True
    assert (deployment["revocation"]["status"], deployment["revocation"]["why"]) == ("not_tested", "no_url")
    assert report["hsts"]["max_age"] == 63072000 and report["alpn"]["check"]["status"] in ("ok", "bad")
    assert "ssl_ecdh_curve" in report["snippets"]["nginx"]


def test_the_json_of_an_nginx_lab_server_and_of_a_failed_run_match_the_schema(audit_cli, tls_lab, closed_port):
    report = run_json(audit_cli, tls_lab.port("b_tls10_enabled"), tls_lab.ca_file)
    validate(report)
    assert report["grade"] == "B" and report["protocol_support"]["TLSv1.0"]["status"] == "ok"
    assert report["cipher_suites"]["TLSv1.2"]["server_order"] is True     # the lab sets ssl_prefer_server_ciphers
    assert report["post_quantum"]["ready"] is False                       # Debian's OpenSSL 3.0
    assert {r["id"] for r in report["recommendations"]} >= {"proto.disable_legacy", "kx.post_quantum"}
    failed = audit_cli(f"localhost:{closed_port}", "--ip", "127.0.0.1", "--json")
    assert failed.returncode == 2
    validate(failed.json)
    assert failed.json["error"]["code"]


def test_the_schema_refuses_a_report_missing_a_section(audit_cli, tls_lab):
    """The schema is strict enough to catch drift: drop one section and it no longer validates."""
    report = run_json(audit_cli, tls_lab.port("a_plus_rsa_hsts"), tls_lab.ca_file)
    validate(report)
    del report["certificates"]
    with pytest.raises(jsonschema.ValidationError):
        validate(report)


def test_the_json_of_an_https_server_names_the_suite_each_simulated_client_gets(audit_cli, tls_lab):
    """Issue #18, judged by: `audit --json` of any HTTPS server has a client-simulation section naming at
    least Chromium, Firefox, curl and Java with the suite each gets."""
    report = run_json(audit_cli, tls_lab.port("a_plus_rsa_hsts"), tls_lab.ca_file)
    validate(report)
    simulation = report["client_simulation"]
    assert simulation["status"] == "ok"
    clients = {c["label"]: c for c in simulation["clients"]}
    for name in ("Chromium", "Firefox", "curl", "Java"):
        (label, got), *_ = [(label, c) for label, c in clients.items() if label.startswith(name)]
        assert got["protocol"] == "TLSv1.3" and got["suite"].startswith("TLS_"), (label, got)
        assert got["recorded"] is True and got["profile"] == "recorded here"
    java8 = clients["Java 8u31 (no TLS 1.3)"]
    assert (java8["protocol"], java8["suite"]) == ("TLSv1.2", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
    assert (java8["recorded"], java8["profile"], java8["modern"]) == (False, "from published lists", False)
