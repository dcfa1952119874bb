"""TLS Audit settings: one file, everything from the environment, loud on bad values.

With nothing set the app runs on SQLite under var/ and a server-less Celery broker
(kombu's filesystem transport), so `make run` works on a machine with only Python.
With DATABASE_URL / REDIS_URL set it uses PostgreSQL and Redis. `.env.example` lists
every variable.
"""

import ipaddress
import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TLSAUDIT_VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = env_str(name)
    if not raw:
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean: use 1/0, true/false, yes/no or on/off.")


def env_int(name: str, default: int, minimum: int = 0) -> int:
    raw = env_str(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


def env_url(name: str, schemes: tuple[str, ...], default: str = "") -> str:
    raw = env_str(name, default)
    if raw and urlsplit(raw).scheme not in schemes:
        raise ImproperlyConfigured(f"{name} must be a URL with scheme {' or '.join(schemes)}, got {raw!r}.")
    return raw


DEBUG = env_bool("DEBUG", default=False)
# Tests and `make run` set TLSAUDIT_DEV=1; it relaxes what a production deploy must set.
DEV_MODE = env_bool("TLSAUDIT_DEV", default=DEBUG)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEV_MODE:
        raise ImproperlyConfigured("SECRET_KEY must be set in production (TLSAUDIT_DEV is off).")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"
elif len(SECRET_KEY) < 32 and not DEV_MODE:
    raise ImproperlyConfigured("SECRET_KEY is too short: use at least 32 random characters.")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost" if DEV_MODE else "")
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must list the host names the app is served under.")

SITE_URL = env_url("SITE_URL", ("http", "https"), "http://127.0.0.1:8000").rstrip("/")
CSRF_TRUSTED_ORIGINS = [SITE_URL]

# Scanning private/loopback targets is an SSRF hole in production; dev and tests need it.
ALLOW_PRIVATE_TARGETS = env_bool("TLSAUDIT_ALLOW_PRIVATE_TARGETS", default=False)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "django_celery_beat",
    "tlsaudit.core",
    "tlsaudit.accounts",
    "tlsaudit.orgs",
    "tlsaudit.sites",
    "tlsaudit.audits",
    "tlsaudit.loadtests",
    "tlsaudit.probes",
    "tlsaudit.alerts",
    "tlsaudit.monitoring",
    "tlsaudit.reports",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "tlsaudit.urls"
WSGI_APPLICATION = "tlsaudit.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "tlsaudit.orgs.context_processors.organizations",
            ],
        },
    },
]


# --- Database ---------------------------------------------------------------------------

def database_config() -> dict:
    url = env_str("DATABASE_URL")
    if not url:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        # WAL + IMMEDIATE transactions let web, worker and beat share one SQLite file.
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "tlsaudit.sqlite3",
            "OPTIONS": {"init_command": "PRAGMA journal_mode=WAL;", "transaction_mode": "IMMEDIATE", "timeout": 20},
        }
    if urlsplit(url).scheme not in ("postgres", "postgresql", "sqlite"):
        raise ImproperlyConfigured(f"DATABASE_URL must be postgres://… (or sqlite:///…), got {url!r}.")
    return dj_database_url.parse(url, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60), conn_health_checks=True)


DATABASES = {"default": database_config()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


# --- Auth -------------------------------------------------------------------------------

AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
EMAIL_VERIFICATION_MAX_AGE = 3 * 24 * 3600
INVITATION_MAX_AGE_DAYS = 14


# --- Email ------------------------------------------------------------------------------

def email_config() -> dict:
    """EMAIL_URL like smtp://user:pass@host:587?tls=1, or console:// / locmem://; else SMTP_* variables."""
    url = env_url("EMAIL_URL", ("smtp", "smtps", "console", "locmem", "file"))
    if not url:
        if env_str("SMTP_HOST"):
            return {
                "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "EMAIL_HOST": env_str("SMTP_HOST"),
                "EMAIL_PORT": env_int("SMTP_PORT", 587, minimum=1),
                "EMAIL_HOST_USER": env_str("SMTP_USER"),
                "EMAIL_HOST_PASSWORD": env_str("SMTP_PASSWORD"),
                "EMAIL_USE_TLS": env_bool("SMTP_USE_TLS", True),
                "EMAIL_USE_SSL": env_bool("SMTP_USE_SSL", False),
            }
        return {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}
    parts = urlsplit(url)
    if parts.scheme in ("console", "locmem"):
        return {"EMAIL_BACKEND": f"django.core.mail.backends.{parts.scheme}.EmailBackend"}
    if parts.scheme == "file":
        return {"EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend", "EMAIL_FILE_PATH": parts.path}
    query = parse_qs(parts.query)
    return {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": parts.hostname or "",
        "EMAIL_PORT": parts.port or (465 if parts.scheme == "smtps" else 587),
        "EMAIL_HOST_USER": unquote(parts.username or ""),
        "EMAIL_HOST_PASSWORD": unquote(parts.password or ""),
        "EMAIL_USE_SSL": parts.scheme == "smtps",
        "EMAIL_USE_TLS": parts.scheme == "smtp" and query.get("tls", ["1"])[0] not in ("0", "false"),
    }


globals().update(email_config())
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 20, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "TLS Audit <noreply@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL


# --- Celery -----------------------------------------------------------------------------

def broker_url() -> str:
    url = env_str("CELERY_BROKER_URL") or env_str("REDIS_URL")
    if not url:
        return "filesystem://"
    if urlsplit(url).scheme not in ("redis", "rediss", "amqp", "filesystem", "memory"):
        raise ImproperlyConfigured(f"REDIS_URL/CELERY_BROKER_URL has an unsupported scheme: {url!r}.")
    return url


CELERY_BROKER_URL = broker_url()
BROKER_DIR = VAR_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("in", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    # One folder for in and out: a producer's "out" is the consumer's "in".
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "in"),
        "data_folder_out": str(BROKER_DIR / "in"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),  # else kombu writes ./control in the cwd
        "store_processed": False,
    }
    CELERY_RESULT_BACKEND = f"file://{VAR_DIR / 'celery-results'}"
    (VAR_DIR / "celery-results").mkdir(parents=True, exist_ok=True)
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
    CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or CELERY_BROKER_URL
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                          "LOCATION": str(VAR_DIR / "cache")}}

# Audits: sslyze's threads ignore soft limits, the hard limit kills the child (sslyze-notes 3.3).
AUDIT_SOFT_TIME_LIMIT = env_int("AUDIT_SOFT_TIME_LIMIT", 240, minimum=30)
AUDIT_HARD_TIME_LIMIT = env_int("AUDIT_HARD_TIME_LIMIT", 300, minimum=60)
if AUDIT_HARD_TIME_LIMIT <= AUDIT_SOFT_TIME_LIMIT:
    raise ImproperlyConfigured("AUDIT_HARD_TIME_LIMIT must be greater than AUDIT_SOFT_TIME_LIMIT.")
# Per socket operation; with one retry a silent target fails in about 25 s.
SCAN_NETWORK_TIMEOUT = env_int("SCAN_NETWORK_TIMEOUT", 3, minimum=1)
SCAN_CONNECTIONS_PER_SERVER = env_int("SCAN_CONNECTIONS_PER_SERVER", 5, minimum=1)
if SCAN_CONNECTIONS_PER_SERVER > 5:
    raise ImproperlyConfigured("SCAN_CONNECTIONS_PER_SERVER is at most 5: more is impolite to the audited server.")

# Load tests (issue #4): defaults of a new organization's caps (editable per org in the admin).
LOAD_MAX_CONCURRENCY = env_int("LOAD_MAX_CONCURRENCY", 100, minimum=1)
LOAD_MAX_REQUESTS_PER_RUN = env_int("LOAD_MAX_REQUESTS_PER_RUN", 5000, minimum=1)
LOAD_MAX_DURATION_S = env_int("LOAD_MAX_DURATION_S", 120, minimum=1)
LOAD_RUNS_PER_DAY = env_int("LOAD_RUNS_PER_DAY", 20, minimum=0)
# Agent tasks each run step is split into (spread over the load workers' hosts).
LOAD_AGENTS = env_int("LOAD_AGENTS", 2, minimum=1)
# Days a site's ownership proof stays valid before it is re-checked (before a run).
VERIFICATION_MAX_AGE_DAYS = env_int("VERIFICATION_MAX_AGE_DAYS", 30, minimum=1)


# Browser probes (issue #5): real Chromium page loads. A probe is 4 variants x K loads.
PROBE_RUNS_PER_DAY = env_int("PROBE_RUNS_PER_DAY", 50, minimum=0)
PROBE_MAX_RUNS = env_int("PROBE_MAX_RUNS", 10, minimum=1)
PROBE_LOAD_TIMEOUT = env_int("PROBE_LOAD_TIMEOUT", 30, minimum=1)
PROBE_SOFT_TIME_LIMIT = env_int("PROBE_SOFT_TIME_LIMIT", 240, minimum=10)
PROBE_HARD_TIME_LIMIT = env_int("PROBE_HARD_TIME_LIMIT", 300, minimum=20)
if PROBE_HARD_TIME_LIMIT <= PROBE_SOFT_TIME_LIMIT:
    raise ImproperlyConfigured("PROBE_HARD_TIME_LIMIT must be greater than PROBE_SOFT_TIME_LIMIT.")


def dns_resolver(name: str) -> tuple[str, int] | None:
    """IP, IP:PORT or [IPv6]:PORT of the DNS server asked for TXT verification; unset = the system's."""
    raw = env_str(name)
    if not raw:
        return None
    host, port = raw, "53"
    if raw.startswith("["):
        host, _, port = raw[1:].partition("]:")
    elif raw.count(":") == 1:
        host, port = raw.split(":")
    try:
        return str(ipaddress.ip_address(host.rstrip("]"))), int(port)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} must be IP or IP:PORT, e.g. 127.0.0.1:5353.") from None


DNS_RESOLVER = dns_resolver("TLSAUDIT_DNS_RESOLVER")

# Seconds without a worker heartbeat before /healthz calls the workers stale.
WORKER_HEARTBEAT_SECONDS = env_int("WORKER_HEARTBEAT_SECONDS", 30, minimum=5)


# --- i18n, static, security -------------------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": VAR_DIR / "media"}},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
                    if not DEV_MODE else "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEV_MODE
if DEV_MODE:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns about a missing root

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_TLS_PROXY", False) else None
_https = SITE_URL.startswith("https://")
SESSION_COOKIE_SECURE = _https
CSRF_COOKIE_SECURE = _https
SECURE_SSL_REDIRECT = _https and env_bool("SECURE_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = 31536000 if _https else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = _https
# The header only makes preloading possible; submitting the domain stays the operator's choice.
SECURE_HSTS_PRELOAD = _https and env_bool("HSTS_PRELOAD", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}, "sslyze": {"level": "WARNING"}},
}
