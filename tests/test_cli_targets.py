"""One target syntax for every measuring command (#30 item 10): HOST, HOST:PORT or a URL, `--ip` on each,
and names checked before anything starts. Pure parsing here; the commands' runs are in tests/load,
tests/browser and tests/test_readme_commands.py."""

import json
import subprocess
import sys

import pytest
from django.conf import settings

from tlsaudit.core.management.base import as_url
from tlsaudit.loadtests.management.commands import handshakes, loadtest, overhead
from tlsaudit.probes.management.commands import probe


@pytest.mark.parametrize("typed, url", [
    ("example.com", "https://example.com/"),
    ("example.com:8443", "https://example.com:8443/"),
    ("http://example.com:8080/x", "http://example.com:8080/x"),
    ("  https://example.com/  ", "https://example.com/"),
    ("", ""),
])
def test_a_bare_host_is_the_https_site(typed, url):
    assert as_url(typed) == url


@pytest.mark.parametrize("typed, expected", [
    ("example.com", ("https", "example.com", 443, "/")),
    ("example.com:8443", ("https", "example.com", 8443, "/")),
    ("https://example.com:8443/health?x=1", ("https", "example.com", 8443, "/health?x=1")),
    ("http://example.com:8080/", ("http", "example.com", 8080, "/")),
])
def test_loadtest_takes_each_form(typed, expected):
    assert loadtest.parse_url(typed) == expected


def sides(target, **options):
    return overhead.parse_sides({"host": target, "http_port": None, "https_port": None, "path": None, **options})


@pytest.mark.parametrize("target, options, expected", [
    ("example.com", {}, ("example.com", {"http": 80, "https": 443}, "/")),
    ("example.com:8443", {}, ("example.com", {"http": 80, "https": 8443}, "/")),
    ("example.com:8443", {"http_port": "8080"}, ("example.com", {"http": 8080, "https": 8443}, "/")),
    ("https://example.com:8443/health", {}, ("example.com", {"http": 80, "https": 8443}, "/health")),
    ("http://example.com:8080/", {"https_port": "8443"}, ("example.com", {"http": 8080, "https": 8443}, "/")),
    ("example.com", {"https_port": "9443", "path": "/x"}, ("example.com", {"http": 80, "https": 9443}, "/x")),
    ("https://example.com/a", {"path": "/a"}, ("example.com", {"http": 80, "https": 443}, "/a")),
])
def test_overhead_takes_the_targets_port_for_its_side_and_the_option_for_the_other(target, options, expected):
    assert sides(target, **options) == expected


def test_handshakes_and_audit_take_a_url_as_well():
    plan = handshakes.parse_arguments({"target": "https://example.com:8443/", "versions": "1.3", "suites": "",
                                       "agents": "1", "per_agent": None, "repeats": "1", "timeout": "5",
                                       "ca_file": None, "insecure": True, "seconds": "1", "deadline": None,
                                       "resume": False, "ip": None})
    assert (plan["host"], plan["port"]) == ("example.com", 8443)


def test_probe_takes_a_bare_host_as_its_https_page():
    kwargs = probe.parse_arguments({"url": "example.com:8443", "ip": None, "ca_file": None, "runs": "3",
                                    "seconds": "5", "timeout": "10", "deadline": None, "https_port": None,
                                    "http_port": None})
    assert (kwargs["host"], kwargs["https_port"], kwargs["http_port"], kwargs["path"]) == ("example.com", 8443, 80, "/")


@pytest.mark.parametrize("command", ["audit", "handshakes", "loadtest", "overhead", "probe"])
def test_every_measuring_command_has_ip_and_the_one_target_syntax(command):
    out = subprocess.run([sys.executable, "manage.py", command, "--help"], cwd=settings.BASE_DIR, text=True,
                         capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin", "TLSAUDIT_DEV": "1"}).stdout
    assert "--ip IP" in out
    assert "HOST, HOST:PORT or https://HOST[:PORT]/" in " ".join(out.split())


def test_a_probe_of_a_name_that_does_not_resolve_ends_before_chromium_starts():
    """The pre-flight's answer: no `result` (the engine's, which carries the browser) in the error."""
    done = subprocess.run([sys.executable, "manage.py", "probe", "does-not-exist.invalid", "--json"],
                          cwd=settings.BASE_DIR, text=True, capture_output=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "TLSAUDIT_DEV": "1"})
    answer = json.loads(done.stdout)
    assert done.returncode == 2 and "does not resolve" in answer["error"]["message"]
    assert "result" not in answer
