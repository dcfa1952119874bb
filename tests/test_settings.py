"""Settings come from the environment and fail loudly on bad values (a real `manage.py check`)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_check(tmp_path, **env):
    base = {k: v for k, v in os.environ.items()
            if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DEBUG", "TLSAUDIT_DEV",
                         "ALLOWED_HOSTS", "EMAIL_URL", "SITE_URL")}
    base.update(TLSAUDIT_VAR_DIR=str(tmp_path), **env)
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=base,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("env, message", [
    ({}, "SECRET_KEY must be set in production"),
    ({"SECRET_KEY": "short"}, "SECRET_KEY is too short"),
    ({"TLSAUDIT_DEV": "maybe"}, "TLSAUDIT_DEV='maybe' is not a boolean"),
    ({"TLSAUDIT_DEV": "1", "DATABASE_URL": "mysql://db/x"}, "DATABASE_URL must be postgres://"),
    ({"TLSAUDIT_DEV": "1", "REDIS_URL": "http://cache"}, "unsupported scheme"),
    ({"TLSAUDIT_DEV": "1", "EMAIL_URL": "pigeon://coop"}, "EMAIL_URL must be a URL with scheme"),
    ({"TLSAUDIT_DEV": "1", "SITE_URL": "ftp://x"}, "SITE_URL must be a URL with scheme http or https"),
    ({"TLSAUDIT_DEV": "1", "WORKER_HEARTBEAT_SECONDS": "soon"}, "WORKER_HEARTBEAT_SECONDS='soon' is not an integer"),
    ({"TLSAUDIT_DEV": "1", "WORKER_HEARTBEAT_SECONDS": "1"}, "WORKER_HEARTBEAT_SECONDS=1 must be at least 5"),
    ({"TLSAUDIT_DEV": "1", "PASSWORD_RESET_LIMIT_PER_ADDRESS": "0"}, "PASSWORD_RESET_LIMIT_PER_ADDRESS=0 must be at least 1"),
    ({"TLSAUDIT_DEV": "1", "REDIS_CONNECT_TIMEOUT": "0"}, "REDIS_CONNECT_TIMEOUT=0 must be at least 1"),
    ({"TLSAUDIT_DEV": "1", "REDIS_SOCKET_TIMEOUT": "2s"}, "REDIS_SOCKET_TIMEOUT='2s' is not an integer"),
    ({"SECRET_KEY": "x" * 50, "ALLOWED_HOSTS": ""}, "ALLOWED_HOSTS must list the host names"),
])
def test_it_refuses_to_start_on_bad_configuration(tmp_path, env, message):
    result = run_check(tmp_path, **env)
    assert result.returncode != 0
    assert message in result.stderr


def test_with_nothing_set_in_dev_it_uses_sqlite_and_the_filesystem_broker(tmp_path):
    code = ("from django.conf import settings as s; "
            "print(s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL, s.EMAIL_BACKEND)")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    env.update(TLSAUDIT_DEV="1", TLSAUDIT_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="tlsaudit.settings")
    out = subprocess.run([sys.executable, "-c", "import django; django.setup(); " + code], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert out == ["django.db.backends.sqlite3", "filesystem://localhost//", "tlsaudit.core.mailconsole.EmailBackend"]
    assert (tmp_path / "broker" / "in").is_dir()


def test_a_production_configuration_passes_the_deploy_check(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}, "TLSAUDIT_VAR_DIR": str(tmp_path), "TLSAUDIT_DEV": "0", "DEBUG": "0",
             "SECRET_KEY": "k" * 20 + "9Xq-random-enough-secret-for-tests-0123456789",
             "ALLOWED_HOSTS": "audit.example.com", "SITE_URL": "https://audit.example.com",
             "EMAIL_URL": "smtp://mailer:secret@smtp.example.com:587"},
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_email_url_is_parsed_into_smtp_settings(settings):
    from tlsaudit import settings as module

    os.environ["EMAIL_URL"] = "smtps://user%40x:p%40ss@mail.example.com"
    try:
        config = module.email_config()
    finally:
        del os.environ["EMAIL_URL"]
    assert config["EMAIL_HOST"] == "mail.example.com"
    assert (config["EMAIL_PORT"], config["EMAIL_USE_SSL"], config["EMAIL_USE_TLS"]) == (465, True, False)
    assert (config["EMAIL_HOST_USER"], config["EMAIL_HOST_PASSWORD"]) == ("user@x", "p@ss")


def test_the_console_email_shows_the_link_whole_between_rules():
    """`make run` prints emails on the console: the verification link must be one line, easy to copy,
    not quoted-printable (`=` line ends, `=3D`) inside a MIME dump."""
    import io

    from django.core.mail import EmailMultiAlternatives

    from tlsaudit.core.mailconsole import RULE, EmailBackend

    link = "http://127.0.0.1:8000/accounts/verify/" + "Mg:1vNqVx:" + "a" * 90 + "/"
    message = EmailMultiAlternatives("Verify your email address", f"Héllo Alice,\n\nOpen {link} to verify.\n",
                                     to=["alice@example.com"])
    message.attach_alternative(f"<p>Open <a href='{link}'>this link</a></p>", "text/html")
    stream = io.StringIO()
    assert EmailBackend(stream=stream).send_messages([message]) == 1
    printed = stream.getvalue()
    assert f"Open {link} to verify." in printed.splitlines()
    assert printed.startswith(RULE) and "EMAIL to alice@example.com" in printed and "Héllo" in printed
    assert "<a href" not in printed and "=3D" not in printed


def test_production_hashes_passwords_with_argon2_and_the_suite_with_a_fast_hasher(settings):
    import tlsaudit.settings as production

    assert production.PASSWORD_HASHERS[0] == "django.contrib.auth.hashers.Argon2PasswordHasher"
    assert settings.PASSWORD_HASHERS == ["django.contrib.auth.hashers.MD5PasswordHasher"]   # tests/conftest.py


def test_a_password_set_under_production_hashers_is_argon2_and_checks(production_hashers, db):
    from tlsaudit.accounts.models import User

    user = User.objects.create_user(email="hash@example.com", password="correct horse battery staple")
    assert user.password.startswith("argon2$")
    assert user.check_password("correct horse battery staple") and not user.check_password("wrong")
