"""`python manage.py probe`: JSON and text against the probe site, and one message per bad argument."""

import json

import pytest
from django.core.management import call_command


def run_cli(*args) -> tuple[int, str, str]:
    from io import StringIO

    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("probe", *args, stdout=out, stderr=err)
    return exit_info.value.code, out.getvalue(), err.getvalue()


def test_it_prints_cold_and_warm_medians_as_json(probe_site):
    code, out, _ = run_cli(probe_site.url("https"), "--ip", "127.0.0.1", "--ca-file", str(probe_site.ca_file),
                           "--runs", "1", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["cold"]["requests"] == 8 and data["cold"]["from_cache"] == 0 and data["cold"]["protocol"] == "h2"
    assert data["warm"]["from_cache"] == 7 and data["warm"]["not_modified"] == 1
    assert data["cold"]["bytes"] > probe_site.front_page_bytes() > data["warm"]["bytes"]
    assert set(data["cold"]["timings_ms"]) >= {"dns", "connect", "tls", "ttfb", "dom_content_loaded", "load"}
    # The other scheme is probed on its default port (80), where nothing listens here.
    assert data["variant_errors"]["http"]["code"] == "refused"
    assert len(data["result"]["loads"]) == 3
    assert (data["rounds"], data["planned_s"]) == (1, 20 + 10)   # --runs 1 caps the 20 s of rounds; + set-up


def test_it_prints_a_table_for_people(probe_site):
    code, out, _ = run_cli(probe_site.url("https"), "--ip", "127.0.0.1", "--ca-file", str(probe_site.ca_file),
                           "--runs", "1")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split()[:7] == ["variant", "mode", "proto", "req", "bytes", "cached", "304"]
    assert lines[2].split()[:4] == ["https", "cold", "h2", "8"] and lines[3].split()[:4] == ["https", "warm", "h2", "8"]
    assert lines[3].split()[5:7] == ["7", "1"]
    assert "http failed: The server refused the connection (site.probe.test:80)." in out
    assert lines[0].startswith(f"Browser probe of https://site.probe.test:{probe_site.https_port}/ and "
                               "http://site.probe.test:80/: 1 round in 20 s (medians, ms)")


def test_the_http_variant_goes_to_the_port_given(probe_site):
    code, out, _ = run_cli(probe_site.url("https"), "--ip", "127.0.0.1", "--ca-file", str(probe_site.ca_file),
                           "--runs", "1", "--http-port", str(probe_site.http_port))
    assert code == 0, out
    assert f"http://site.probe.test:{probe_site.http_port}/" in out.splitlines()[0]
    assert [line.split()[:2] for line in out.splitlines()[2:6]] == [
        ["https", "cold"], ["https", "warm"], ["http", "cold"], ["http", "warm"]]
    assert "http failed" not in out


def test_it_exits_2_with_the_reason_when_the_probe_fails(probe_site):
    code, out, _ = run_cli(probe_site.url("https"), "--ip", "127.0.0.1", "--runs", "1", "--json")
    assert code == 2
    assert json.loads(out)["error"]["code"] == "certificate"


@pytest.mark.parametrize("args, message", [
    ((), "URL: give the page to probe, e.g. https://example.com/"),
    (("ftp://example.com/",), "URL: 'ftp://example.com/' must start with https:// or http://"),
    (("https://user:pw@example.com/",), "URL: credentials in the URL are not supported"),
    (("https://example.com:99999/",), "URL: 'https://example.com:99999/' has an invalid port (1-65535)"),
    (("https://example.com:0/",), "URL: 'https://example.com:0/' has an invalid port (1-65535)"),
    (("https://exa mple.com/",), "URL: 'exa mple.com' is not a valid host name"),
    (("https://example.com/", "--ip", "1.2.3"), "--ip: '1.2.3' is not an IPv4 or IPv6 address"),
    (("https://example.com/", "--ca-file", "/nonexistent.pem"), "--ca-file: /nonexistent.pem does not exist"),
    (("https://example.com/", "--ca-file", "/etc/hostname"), "--ca-file: /etc/hostname is not a PEM certificate file"),
    (("https://example.com/", "--runs", "two"), "--runs: 'two' is not a whole number"),
    (("https://example.com/", "--runs", "0"), "--runs must be between 1 and 50, got 0"),
    (("https://example.com/", "--runs", "51"), "--runs must be between 1 and 50, got 51"),
    (("https://example.com/", "--seconds", "0.5"), "--seconds must be between 1 and 600 seconds, got 0.5"),
    (("https://example.com/", "--seconds", "forever"), "--seconds: 'forever' is not a number of seconds"),
    (("https://example.com/", "--timeout", "soon"), "--timeout: 'soon' is not a number of seconds"),
    (("https://example.com/", "--timeout", "0.5"), "--timeout must be between 1 and 120 seconds, got 0.5"),
    (("https://example.com/", "--timeout", "nan"), "--timeout must be between 1 and 120 seconds, got nan"),
    (("https://example.com/", "--http-port", "eighty"), "--http-port: 'eighty' is not a port number"),
    (("https://example.com/", "--http-port", "70000"), "--http-port must be between 1 and 65535, got 70000"),
    (("https://example.com:8443/", "--https-port", "443"), "--https-port: 443 differs from the target's port 8443"),
])
def test_it_names_the_bad_argument(args, message):
    code, out, _ = run_cli(*args, "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert error["code"] == "invalid_argument" and error["message"].startswith(message), error["message"]
    code, _, err = run_cli(*args)
    assert code == 2 and err.startswith(f"probe failed: {message}")
