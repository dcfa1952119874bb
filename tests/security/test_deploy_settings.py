"""Production settings: `manage.py check --deploy` is clean, and a real request under them gets the
security headers and cookie flags. Each runs in a subprocess with a production-like environment
(DEBUG off, TLSAUDIT_DEV off, https SITE_URL, a long SECRET_KEY), never this test process's settings."""

import json
import os
import secrets
import subprocess
import sys

import pytest
from django.conf import settings

PRODUCTION = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "audit.example.com",
    "SITE_URL": "https://audit.example.com",
    "DEBUG": "0",
    "TLSAUDIT_DEV": "0",
    "DATABASE_URL": os.environ.get("DATABASE_URL", ""),
    "REDIS_URL": os.environ.get("REDIS_URL", ""),
}


def run(args, tmp_path, **changes):
    env = {**PRODUCTION, "TLSAUDIT_VAR_DIR": str(tmp_path), "TLSAUDIT_STATIC_ROOT": str(tmp_path / "static"), **changes}
    return subprocess.run([sys.executable, *args], env=env, cwd=settings.BASE_DIR, capture_output=True, text=True,
                          timeout=180)


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_check_deploy_does_flag_a_plain_http_deployment(tmp_path):
    # The clean result above means something only if the same command fails an insecure setup.
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path,
                 SITE_URL="http://audit.example.com")
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr + result.stdout


SHOW_RESPONSE = """
import json, os
os.environ["DJANGO_SETTINGS_MODULE"] = "tlsaudit.settings"
import django
django.setup()
from django.core.management import call_command
from django.test import Client
call_command("collectstatic", "--noinput", verbosity=0)  # production serves hashed files from a manifest
response = Client(HTTP_HOST="audit.example.com").get("/accounts/login/", secure=True)
cookies = {name: {"secure": bool(c["secure"]), "httponly": bool(c["httponly"]), "samesite": c["samesite"],
                  "path": c["path"], "domain": c["domain"]} for name, c in response.cookies.items()}
print(json.dumps({"status": response.status_code, "headers": dict(response.headers), "cookies": cookies}))
"""


@pytest.fixture(scope="module")
def production_response(tmp_path_factory):
    result = run(["-c", SHOW_RESPONSE], tmp_path_factory.mktemp("var"))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_pages_send_hsts_and_the_security_headers(production_response):
    headers = production_response["headers"]
    assert production_response["status"] == 200
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert "unsafe-inline" not in headers["Content-Security-Policy"]


def test_production_cookies_are_host_only_secure_and_kept_from_scripts(production_response):
    csrf = production_response["cookies"]["__Host-csrftoken"]
    assert csrf == {"secure": True, "httponly": True, "samesite": "Lax", "path": "/", "domain": ""}


def test_production_redirects_plain_http_to_https(tmp_path):
    script = SHOW_RESPONSE.replace("secure=True", "secure=False")
    result = run(["-c", script], tmp_path)
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["status"] == 301 and answer["headers"]["Location"] == "https://audit.example.com/accounts/login/"


@pytest.mark.parametrize("changes, error", [
    ({"SECRET_KEY": ""}, "SECRET_KEY must be set in production"),
    ({"SECRET_KEY": "short"}, "SECRET_KEY is too short"),
    ({"ALLOWED_HOSTS": ""}, "ALLOWED_HOSTS must list the host names"),
])
def test_production_refuses_to_start_without_its_secrets(tmp_path, changes, error):
    result = run(["manage.py", "check"], tmp_path, **changes)
    assert result.returncode != 0 and error in result.stderr


SHOW_PATHS = """
import os
os.environ["DJANGO_SETTINGS_MODULE"] = "tlsaudit.settings"
from django.conf import settings
print(settings.VAR_DIR, settings.STATIC_ROOT, settings.DEFAULT_FROM_EMAIL, settings.API_THROTTLE_RATE)
"""


def test_a_variable_set_empty_means_its_default_as_docker_compose_passes_env_example(tmp_path):
    """`.env` copied from `.env.example` sets most variables empty; compose passes them on as empty values,
    which replaced the image's TLSAUDIT_VAR_DIR and made every page a 500 (#31)."""
    result = run(["-c", SHOW_PATHS], tmp_path, TLSAUDIT_VAR_DIR="", TLSAUDIT_STATIC_ROOT="", DEFAULT_FROM_EMAIL="",
                 API_THROTTLE_RATE=" ")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(settings.BASE_DIR / "var"), str(settings.BASE_DIR / "staticfiles"),
                                     "TLS", "Audit", "<noreply@localhost>", "600/min"]
