"""TLS Audit settings: one file, everything from the environment, loud on bad values.

With nothing set the app runs on SQLite under var/ and a server-less Celery broker
(kombu's filesystem transport), so `make run` works on a machine with only Python.
With DATABASE_URL / REDIS_URL set it uses PostgreSQL and Redis. `.env.example` lists
every variable.
"""

import ipaddress
import json
import os
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    """A variable set empty means the default, as when it is absent: `.env` files list every variable,
    most of them empty, and docker compose passes `NAME=` on as an empty value."""
    return (os.environ.get(name) or "").strip() or default


VAR_DIR = Path(env_str("TLSAUDIT_VAR_DIR") or BASE_DIR / "var")


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
        raise ImproperlyConfigured("SECRET_KEY must be set in production (TLSAUDIT_DEV is off); in a checkout, "
                                   "put TLSAUDIT_DEV=1 before the command (SQLite under var/).")
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


def env_ari_directories(name: str) -> list[dict]:
    """Extra ACME servers with ARI (a private CA's): a JSON list of {"name", "issuer_orgs", "directory"}."""
    text = env_str(name, "[]")
    try:
        entries = json.loads(text)
    except ValueError:
        entries = None
    well_formed = isinstance(entries, list) and all(
        isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("directory"), str)
        and isinstance(e.get("issuer_orgs"), list) for e in entries)
    if not well_formed:
        raise ImproperlyConfigured(f'{name} must be a JSON list of {{"name", "issuer_orgs", "directory"}}, '
                                   f"got {text[:80]!r}")
    return entries


# ACME Renewal Information (RFC 9773): these CAs are asked after each audit, before the built-in ones
# (tlsaudit/domain/data/ari_directories.json).
ARI_DIRECTORIES = env_ari_directories("TLSAUDIT_ARI_DIRECTORIES")
# Each ARI request (the directory, then the window) ends within this, lookup and connect included.
ARI_TIMEOUT_SECONDS = env_int("ARI_TIMEOUT_SECONDS", 10, minimum=1)

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
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
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
    "tlsaudit.api",
]

MIDDLEWARE = [
    # First: an API path without its trailing slash (or with one too many) is served as the route it
    # names, so every middleware below sees the same path as the view.
    "tlsaudit.api.middleware.ApiTrailingSlashMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Outermost of ours: it marks every /api/ response no-store, those of the middleware below included.
    "tlsaudit.api.middleware.ApiNoStoreMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before everything that reads the database (session, user): a database outage is a friendly 503.
    "tlsaudit.core.unavailable.DatabaseUnavailableMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Work the broker did not take: its page with what happens to it (the API answers 503 itself).
    "tlsaudit.core.unavailable.QueueUnavailableMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a lockout raised during login into the lockout page.
    "axes.middleware.AxesMiddleware",
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
    config = dj_database_url.parse(url, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60), conn_health_checks=True)
    if config["ENGINE"].endswith("postgresql"):
        # An unreachable database host must fail a request in seconds (a 503 page), not hang for minutes.
        config.setdefault("OPTIONS", {})["connect_timeout"] = env_int("DATABASE_CONNECT_TIMEOUT", 5, minimum=1)
    return config


DATABASES = {"default": database_config()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


# --- Auth -------------------------------------------------------------------------------

AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
# Axes first: it refuses a locked-out (email, IP) before the password is even checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
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
        return {"EMAIL_BACKEND": "tlsaudit.core.mailconsole.EmailBackend"}  # framed plain text
    parts = urlsplit(url)
    if parts.scheme == "console":
        return {"EMAIL_BACKEND": "tlsaudit.core.mailconsole.EmailBackend"}
    if parts.scheme == "locmem":
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

# A Redis that does not answer (a dropped route, a hung server) must cost a request at most these
# seconds, after which the cache's users fail open (rate limits, the API throttle) and a task message
# is refused (core.queue: 503): without them a blackholed Redis held every request until the kernel
# gave up on the connect (~2 min), and a hung one held a send for ever.
REDIS_CONNECT_TIMEOUT = env_int("REDIS_CONNECT_TIMEOUT", 1, minimum=1)
REDIS_SOCKET_TIMEOUT = env_int("REDIS_SOCKET_TIMEOUT", 2, minimum=1)

def broker_url() -> str:
    url = env_str("CELERY_BROKER_URL") or env_str("REDIS_URL")
    if not url:
        return "filesystem://localhost//"   # with a host: kombu warns "No hostname was supplied" otherwise
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
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600, "socket_timeout": REDIS_SOCKET_TIMEOUT,
                                       "socket_connect_timeout": REDIS_CONNECT_TIMEOUT}
    CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or CELERY_BROKER_URL
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "OPTIONS": {"socket_connect_timeout": REDIS_CONNECT_TIMEOUT,
                                      "socket_timeout": REDIS_SOCKET_TIMEOUT}}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                          "LOCATION": str(VAR_DIR / "cache")}}

# Audits: sslyze's threads ignore soft limits, the hard limit kills the child (sslyze-notes 3.3).
AUDIT_SOFT_TIME_LIMIT = env_int("AUDIT_SOFT_TIME_LIMIT", 240, minimum=30)
AUDIT_HARD_TIME_LIMIT = env_int("AUDIT_HARD_TIME_LIMIT", 300, minimum=60)
if AUDIT_HARD_TIME_LIMIT <= AUDIT_SOFT_TIME_LIMIT:
    raise ImproperlyConfigured("AUDIT_HARD_TIME_LIMIT must be greater than AUDIT_SOFT_TIME_LIMIT.")
# Crash recovery: a running audit writes a heartbeat; one silent for the lease (and still
# silent one heartbeat later) lost its worker, and the reaper (every REAPER_INTERVAL_SECONDS) re-queues it
# once: a worker lost with its machine costs about lease + interval + heartbeat (~20 s); a process seen dead
# on the same host is taken over at once. A worker process beats all its audits in one UPDATE per heartbeat
# (bench/heartbeat_cost.py). A queued audit the broker refused or lost is sent as soon as the broker answers;
# one sent AUDIT_RESEND_AFTER_SECONDS ago is sent again if the scan queue is empty; it fails after
# AUDIT_QUEUE_TIMEOUT_SECONDS.
AUDIT_HEARTBEAT_SECONDS = env_int("AUDIT_HEARTBEAT_SECONDS", 3, minimum=1)
AUDIT_LEASE_SECONDS = env_int("AUDIT_LEASE_SECONDS", 15, minimum=2)
if AUDIT_LEASE_SECONDS < 2 * AUDIT_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured("AUDIT_LEASE_SECONDS must be at least twice AUDIT_HEARTBEAT_SECONDS.")
# The reaper's second look at a silent audit waits one heartbeat plus this slack (a beat's own write time).
AUDIT_SECOND_LOOK_SLACK_SECONDS = env_int("AUDIT_SECOND_LOOK_SLACK_SECONDS", 2, minimum=0)
AUDIT_RESEND_AFTER_SECONDS = env_int("AUDIT_RESEND_AFTER_SECONDS", 900, minimum=1)
# A retry held by a worker (waiting for a busy target) this long past its due time is sent again:
# its worker died elsewhere, froze, or dropped it on a broker reconnect. Worst case after a fault: the
# retry's countdown + this + one reaper interval (10 + 10 + 3 s).
AUDIT_HELD_GRACE_SECONDS = env_int("AUDIT_HELD_GRACE_SECONDS", 10, minimum=1)
AUDIT_QUEUE_TIMEOUT_SECONDS = env_int("AUDIT_QUEUE_TIMEOUT_SECONDS", 3 * 3600, minimum=1)
REAPER_INTERVAL_SECONDS = env_int("REAPER_INTERVAL_SECONDS", 3, minimum=1)
# Seconds between a webhook's failed attempt (5xx, timeout, refused) and the next: 12 retries over ~21 h,
# so a receiver down for a deploy, a night or a day still gets every event. A sweep on the beat
# (every WEBHOOK_RETRY_SWEEP_SECONDS) sends the due ones, so a worker restart loses none.
WEBHOOK_RETRY_DELAYS_S = [float(d) for d in env_list(
    "WEBHOOK_RETRY_DELAYS_S", "10,30,60,120,300,600,1200,2400,4800,9600,19200,38400")]
WEBHOOK_RETRY_SWEEP_SECONDS = env_int("WEBHOOK_RETRY_SWEEP_SECONDS", 15, minimum=1)
# Per socket operation; with one retry a silent target fails in about 25 s.
SCAN_NETWORK_TIMEOUT = env_int("SCAN_NETWORK_TIMEOUT", 3, minimum=1)
# How long one of the audit's connections may live, from its connect: a handshake slower than this is
# broken (or dripped by a hostile server), whatever the network. Tests shorten it (tests/hostile_targets).
SCAN_CONNECTION_LIFETIME_SECONDS = env_int("SCAN_CONNECTION_LIFETIME_SECONDS", 10, minimum=2)
SCAN_CONNECTIONS_PER_SERVER = env_int("SCAN_CONNECTIONS_PER_SERVER", 5, minimum=1)
if SCAN_CONNECTIONS_PER_SERVER > 5:
    raise ImproperlyConfigured("SCAN_CONNECTIONS_PER_SERVER is at most 5: more is impolite to the audited server.")
# The scan pool: a worker started with `--pool threads --concurrency SCAN_POOL_THREADS` runs
# that many audits at once in one process. Whatever the audits, one process opens at most
# SCAN_CONNECTIONS_PER_IP connections to one IP address (several sites on one address share them) and
# SCAN_MAX_CONNECTIONS in all (workers/net/deadline.py Gates).
SCAN_POOL_THREADS = env_int("SCAN_POOL_THREADS", 16, minimum=1)
SCAN_CONNECTIONS_PER_IP = env_int("SCAN_CONNECTIONS_PER_IP", 5, minimum=1)
SCAN_MAX_CONNECTIONS = env_int("SCAN_MAX_CONNECTIONS", 256, minimum=1)
# Nightly slots: each minute of an organization's window holds at most
# NIGHTLY_MAX_STARTS_PER_MINUTE scheduled audit starts (tlsaudit/domain/nightly.py). By default what the
# scan pools finish in a minute: SCAN_WORKER_HOSTS x SCAN_POOL_THREADS threads, one audit each per
# NIGHTLY_AUDIT_SECONDS (an audit at 50 ms RTT takes 19-24 s; 30 leaves room for slower servers).
SCAN_WORKER_HOSTS = env_int("SCAN_WORKER_HOSTS", 1, minimum=1)
NIGHTLY_AUDIT_SECONDS = env_int("NIGHTLY_AUDIT_SECONDS", 30, minimum=1)
NIGHTLY_MAX_STARTS_PER_MINUTE = env_int(
    "NIGHTLY_MAX_STARTS_PER_MINUTE",
    max(1, SCAN_POOL_THREADS * SCAN_WORKER_HOSTS * 60 // NIGHTLY_AUDIT_SECONDS), minimum=1)
if SCAN_MAX_CONNECTIONS < SCAN_CONNECTIONS_PER_SERVER:
    raise ImproperlyConfigured("SCAN_MAX_CONNECTIONS must be at least SCAN_CONNECTIONS_PER_SERVER.")
# One audit's overall deadline (engine, task and `manage.py audit`): every socket of the audit obeys it,
# so a dead, trickling or stalling server ends the audit by then, with the reason. A full audit of a
# server 150 ms away takes ~35 s (bench/audit_budget.py). It must come before the task's soft limit.
AUDIT_DEADLINE_SECONDS = env_int("AUDIT_DEADLINE_SECONDS", 50, minimum=10)
if AUDIT_DEADLINE_SECONDS >= AUDIT_SOFT_TIME_LIMIT:
    raise ImproperlyConfigured("AUDIT_DEADLINE_SECONDS must be less than AUDIT_SOFT_TIME_LIMIT.")

# Load tests: defaults of a new organization's caps (editable per org in the admin).
LOAD_MAX_CONCURRENCY = env_int("LOAD_MAX_CONCURRENCY", 100, minimum=1)
LOAD_MAX_REQUESTS_PER_RUN = env_int("LOAD_MAX_REQUESTS_PER_RUN", 5000, minimum=1)
LOAD_MAX_DURATION_S = env_int("LOAD_MAX_DURATION_S", 120, minimum=1)
LOAD_RUNS_PER_DAY = env_int("LOAD_RUNS_PER_DAY", 20, minimum=0)
# A load or handshake run in which every request / handshake times out for this long (a dead, stalling or
# trickling server) ends with the reason, whatever its size (at least the request timeout + 5 s).
LOAD_STALL_SECONDS = env_int("LOAD_STALL_SECONDS", 40, minimum=2)
# Each step of a measured handshake (TCP connect, TLS handshake, the probe request) ends within this.
HANDSHAKE_STEP_TIMEOUT_SECONDS = env_int("HANDSHAKE_STEP_TIMEOUT_SECONDS", 10, minimum=1)
# The measuring commands (loadtest, overhead, handshakes, probe) end by this many seconds unless --deadline
# (or loadtest -t) asks for more: run as a new user runs them, against a dead, slow or hostile server, they
# end with an error in under a minute. (`audit` uses AUDIT_DEADLINE_SECONDS, as its task does.)
CLI_DEADLINE_SECONDS = env_int("CLI_DEADLINE_SECONDS", 50, minimum=5)
# How long a task waits before it asks again for a target another audit, run or probe holds (its retry
# countdown): an audit of one ip:port at a time, one load run, one probe.
AUDIT_LOCK_WAIT_SECONDS = env_int("AUDIT_LOCK_WAIT_SECONDS", 10, minimum=1)
# One audit per IP address at a time in the whole fleet, the others in line in the order they asked
# (core.turns); an audit that waited this long in line fails as "address_busy" (ours, not the server's).
# More than one audit of an address at once is allowed only by raising SCAN_AUDITS_PER_IP, which gives up
# the fleet-wide politeness: up to that many times SCAN_CONNECTIONS_PER_IP connections to the address.
SCAN_AUDITS_PER_IP = env_int("SCAN_AUDITS_PER_IP", 1, minimum=1)
AUDIT_TURN_WAIT_SECONDS = env_int("AUDIT_TURN_WAIT_SECONDS", max(1, min(3600, AUDIT_QUEUE_TIMEOUT_SECONDS // 2)),
                                  minimum=1)
if AUDIT_TURN_WAIT_SECONDS > max(1, AUDIT_QUEUE_TIMEOUT_SECONDS // 2):
    # else the reaper would fail a waiting audit as "no worker started it" before its own bound says why
    raise ImproperlyConfigured("AUDIT_TURN_WAIT_SECONDS must be at most half of AUDIT_QUEUE_TIMEOUT_SECONDS.")
LOAD_LOCK_WAIT_SECONDS = env_int("LOAD_LOCK_WAIT_SECONDS", 5, minimum=1)
PROBE_LOCK_WAIT_SECONDS = env_int("PROBE_LOCK_WAIT_SECONDS", 10, minimum=1)
# Agent tasks each run step is split into (spread over the load workers' hosts).
LOAD_AGENTS = env_int("LOAD_AGENTS", 2, minimum=1)
# Days a site's ownership proof stays valid before it is re-checked (before a run).
VERIFICATION_MAX_AGE_DAYS = env_int("VERIFICATION_MAX_AGE_DAYS", 30, minimum=1)


# Browser probes: real Chromium page loads. A round is 4 loads (variant x mode); a probe
# runs rounds for its seconds (default PROBE_DEFAULT_SECONDS), at most PROBE_MAX_RUNS of them.
PROBE_RUNS_PER_DAY = env_int("PROBE_RUNS_PER_DAY", 50, minimum=0)
PROBE_MAX_RUNS = env_int("PROBE_MAX_RUNS", 20, minimum=1)
PROBE_DEFAULT_SECONDS = env_int("PROBE_DEFAULT_SECONDS", 20, minimum=1)
PROBE_MAX_SECONDS = env_int("PROBE_MAX_SECONDS", 120, minimum=1)
PROBE_LOAD_TIMEOUT = env_int("PROBE_LOAD_TIMEOUT", 30, minimum=1)
PROBE_SOFT_TIME_LIMIT = env_int("PROBE_SOFT_TIME_LIMIT", 240, minimum=10)
PROBE_HARD_TIME_LIMIT = env_int("PROBE_HARD_TIME_LIMIT", 300, minimum=20)
if PROBE_HARD_TIME_LIMIT <= PROBE_SOFT_TIME_LIMIT:
    raise ImproperlyConfigured("PROBE_HARD_TIME_LIMIT must be greater than PROBE_SOFT_TIME_LIMIT.")
# A PDF report's Chromium (every process it starts, by proportional set size): past this it is killed and the
# report fails saying so (an image or page built to exhaust the shared jobs worker).
REPORT_RENDER_MEMORY_MB = env_int("REPORT_RENDER_MEMORY_MB", 1536, minimum=256)


def dns_resolver(name: str) -> tuple[str, int] | None:
    """IP, IP:PORT or [IPv6]:PORT of the DNS server the app asks (targets, webhooks, AIA, browser-probe
    hosts, TXT verification); unset = the system's resolver."""
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
# /healthz shows its checks' details (database engine, broker URL, workers) to staff and to callers
# sending `Authorization: Bearer <HEALTHZ_TOKEN>`; anyone else gets only the status. Empty: no token.
HEALTHZ_TOKEN = env_str("HEALTHZ_TOKEN")
if HEALTHZ_TOKEN and len(HEALTHZ_TOKEN) < 32:
    raise ImproperlyConfigured("HEALTHZ_TOKEN is too short: use at least 32 random characters.")


# --- Abuse limits -----------------------------------------------------------
# Manual and API audits (scheduled ones are exempt) per organization per hour, and per target
# (host:port, summed over every organization) per window: many sign-ups cannot gang up on one server.
AUDIT_LIMIT_PER_ORG_HOUR = env_int("AUDIT_LIMIT_PER_ORG_HOUR", 30, minimum=1)
AUDIT_LIMIT_PER_TARGET = env_int("AUDIT_LIMIT_PER_TARGET", 5, minimum=1)
AUDIT_LIMIT_TARGET_MINUTES = env_int("AUDIT_LIMIT_TARGET_MINUTES", 10, minimum=1)
# Audits asked for past the hourly limit wait in line (tlsaudit/audits/waiting.py); beat starts them as
# the hour frees up, checking this often.
WAITING_AUDITS_SWEEP_SECONDS = env_int("WAITING_AUDITS_SWEEP_SECONDS", 60, minimum=1)
# "Send now" on the digests page: at most one extra digest per organization in this many minutes, and this
# many a day (each mails every recipient, people outside the agency).
DIGEST_SEND_NOW_MINUTES = env_int("DIGEST_SEND_NOW_MINUTES", 10, minimum=1)
DIGEST_SEND_NOW_PER_DAY = env_int("DIGEST_SEND_NOW_PER_DAY", 5, minimum=1)
# PDF reports asked for per organization per hour (every role may ask; each is a Chromium render).
REPORT_LIMIT_PER_ORG_HOUR = env_int("REPORT_LIMIT_PER_ORG_HOUR", 20, minimum=1)
# Browser probes, on top of PROBE_RUNS_PER_DAY: per organization per hour, per host per window.
PROBE_LIMIT_PER_ORG_HOUR = env_int("PROBE_LIMIT_PER_ORG_HOUR", 10, minimum=1)
PROBE_LIMIT_PER_TARGET = env_int("PROBE_LIMIT_PER_TARGET", 3, minimum=1)
PROBE_LIMIT_TARGET_MINUTES = env_int("PROBE_LIMIT_TARGET_MINUTES", 30, minimum=1)
# Sign-up attempts (every POST, so the form cannot be used to enumerate accounts quickly) per client IP.
SIGNUP_LIMIT_PER_IP = env_int("SIGNUP_LIMIT_PER_IP", 10, minimum=1)
SIGNUP_LIMIT_WINDOW_MINUTES = env_int("SIGNUP_LIMIT_WINDOW_MINUTES", 60, minimum=1)
# Password-reset requests (each sends an email): per client IP and per typed address, every POST counts.
PASSWORD_RESET_LIMIT_PER_IP = env_int("PASSWORD_RESET_LIMIT_PER_IP", 10, minimum=1)
PASSWORD_RESET_LIMIT_PER_ADDRESS = env_int("PASSWORD_RESET_LIMIT_PER_ADDRESS", 3, minimum=1)
PASSWORD_RESET_LIMIT_WINDOW_MINUTES = env_int("PASSWORD_RESET_LIMIT_WINDOW_MINUTES", 60, minimum=1)
# Invitations (each mails an address someone else chose): per organization, per inviter (all their
# organizations together) and per recipient inbox (all organizations together, see domain/mailbox.py).
INVITATION_LIMIT_PER_ORG = env_int("INVITATION_LIMIT_PER_ORG", 20, minimum=1)
INVITATION_LIMIT_PER_INVITER = env_int("INVITATION_LIMIT_PER_INVITER", 20, minimum=1)
INVITATION_LIMIT_PER_RECIPIENT = env_int("INVITATION_LIMIT_PER_RECIPIENT", 3, minimum=1)
INVITATION_LIMIT_WINDOW_MINUTES = env_int("INVITATION_LIMIT_WINDOW_MINUTES", 1440, minimum=1)
# Verification emails (sign-up and "send it again"): per account, per client IP and per inbox.
VERIFICATION_LIMIT_PER_USER = env_int("VERIFICATION_LIMIT_PER_USER", 3, minimum=1)
VERIFICATION_LIMIT_PER_IP = env_int("VERIFICATION_LIMIT_PER_IP", 10, minimum=1)
VERIFICATION_LIMIT_PER_ADDRESS = env_int("VERIFICATION_LIMIT_PER_ADDRESS", 3, minimum=1)
VERIFICATION_LIMIT_WINDOW_MINUTES = env_int("VERIFICATION_LIMIT_WINDOW_MINUTES", 60, minimum=1)

# Login throttling (django-axes): N failures of one (email, IP) pair lock that pair out for M minutes.
# Per pair, not per IP: an office behind one NAT address is not locked out by one colleague's typos.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_USERNAME_CALLABLE = "tlsaudit.accounts.signals.login_username"
AXES_CLIENT_IP_CALLABLE = "tlsaudit.core.clientip.client_ip"
AXES_LOCKOUT_CALLABLE = "tlsaudit.accounts.views.locked_out"  # 429 page with Retry-After
AXES_RESET_ON_SUCCESS = True
AXES_DISABLE_ACCESS_LOG = True  # successes go to our own audit log (core.AuditLogEntry)
AXES_VERBOSE = False


# --- i18n, static, security -------------------------------------------------------------

# --- REST API ---------------------------------------------------------------------

API_THROTTLE_RATE = env_str("API_THROTTLE_RATE", "600/min")
if not re.fullmatch(r"\d+/(s|sec|m|min|h|hour|d|day)", API_THROTTLE_RATE):
    raise ImproperlyConfigured(f"API_THROTTLE_RATE must look like 600/min, got {API_THROTTLE_RATE!r}.")
# An Idempotency-Key stays "in flight" (409) this long at most when the request holding it dies
# with its process; then a retry takes it over. Longer than any request can live: gunicorn's
# --timeout (30 s, Dockerfile and docker-compose.yml) kills a worker stuck in one.
IDEMPOTENCY_LEASE_SECONDS = env_int("IDEMPOTENCY_LEASE_SECONDS", 45, minimum=1)
API_PAGE_SIZE = env_int("API_PAGE_SIZE", 50, minimum=1)
API_MAX_PAGE_SIZE = env_int("API_MAX_PAGE_SIZE", 200, minimum=1)
API_CSV_MAX_ROWS = env_int("API_CSV_MAX_ROWS", 100000, minimum=1)
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tlsaudit.api.auth.ApiKeyAuthentication",
                                       "tlsaudit.api.auth.CsrfSessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tlsaudit.api.permissions.OrgRolePermission"],
    "DEFAULT_THROTTLE_CLASSES": ["tlsaudit.api.throttling.PerKeyThrottle"],
    "DEFAULT_PAGINATION_CLASS": "tlsaudit.api.pagination.Cursor",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer", "tlsaudit.api.csv.CSVRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "tlsaudit.api.errors.handle",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "TLS Audit API",
    "DESCRIPTION": "Sites, audits, grades, load tests, browser probes and reports of one organization. "
                   "Authenticate with `Authorization: Bearer <key>`; see docs/api.md.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "tlsaudit.api.schema.add_error_responses"],
    # One name per choice set where several resources have a `status` or `kind` field.
    "ENUM_NAME_OVERRIDES": {
        "JobStatusEnum": "tlsaudit.audits.models.Audit.Status",   # audits, probes, reports
        "PerfRunStatusEnum": "tlsaudit.loadtests.models.PerfRun.Status",
        "DeliveryStatusEnum": "tlsaudit.alerts.models.WebhookDelivery.Status",
        "PerfRunKindEnum": "tlsaudit.loadtests.models.PerfRun.Kind",
        "ReportKindEnum": "tlsaudit.reports.models.Report.Kind",
        "LoadRunKindEnum": ["load", "sweep"],
        "HttpSchemeEnum": ["https", "http"],
    },
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Beside the code, not in var/: static files belong to a release, and the image's var/ is a volume the
# containers share across releases.
STATIC_ROOT = Path(env_str("TLSAUDIT_STATIC_ROOT") or BASE_DIR / "staticfiles")
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
# Lax, not Strict: a link from an alert email must land signed in; cross-site POSTs still carry no cookie.
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
# htmx sends the token from <body hx-headers>, no script reads the cookie: keep it from scripts.
CSRF_COOKIE_HTTPONLY = True
if _https:
    # __Host- cookies are refused unless Secure, host-only and Path=/: a sibling subdomain cannot plant them.
    SESSION_COOKIE_NAME = "__Host-sessionid"
    CSRF_COOKIE_NAME = "__Host-csrftoken"

# Content-Security-Policy (django-csp 4): scripts and styles only from our own static files, no inline
# code, no eval. Chart data comes through json_script (type=application/json, never executed);
# htmx is configured by <meta name="htmx-config"> not to inject its indicator <style> or eval.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}, "sslyze": {"level": "WARNING"},
                # axes logs every login at INFO; ours (tlsaudit.audit) already does, with the account named.
                "axes": {"level": "WARNING"}},
}
