"""Private PostgreSQL, Redis and app processes for the fault tests (issue #8).

The machine's PostgreSQL (5432) and Redis (6379) serve everybody's tests at once, so a fault test
never touches them: it stops and restarts only what this module starts, on free 127.0.0.1 ports in
temp directories. The app runs as it does in production, as separate processes (Celery workers with
the prefork pool, beat with django-celery-beat, gunicorn), pointed at the private instances through
DATABASE_URL / REDIS_URL; the test process reads the results with plain SQL.

    pg = PrivatePostgres(tmp); pg.init(); pg.start()       # initdb as "postgres" when run as root
    redis = PrivateRedis(tmp); redis.start()
    app = App(env_for(pg.url("db"), redis.url()), logs)
    worker = app.worker("w1", queues=("scan", "default"))   # waits until it is ready
    pg.restart(); redis.restart()                             # the faults
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import re
import selectors
import signal
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import psycopg
import redis as redis_client

from tests.support.tls_servers import die_with_parent
from tests.support.waiting import wait_until  # noqa: F401  (the fault tests import it from here)

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
IP = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((IP, 0))
        return sock.getsockname()[1]


def tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else "(no log)"


# --- PostgreSQL -----------------------------------------------------------------------------

def postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (Debian: postgresql)")
    return Path(found[-1]).parent


def postgres_account() -> pwd.struct_passwd | None:
    """initdb refuses to run as root: as root, the cluster belongs to Debian's "postgres" account."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("running as root needs the 'postgres' account (Debian's postgresql package "
                           "creates it) to own the private test cluster") from None


class PrivatePostgres:
    """A throw-away cluster: trust auth, no fsync, listening on a free port of 127.0.0.1 only."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.data = directory / "data"
        self.log = directory / "postgres.log"
        self.port = free_port()
        self.bin = postgres_bin()
        self.account = postgres_account()
        self.process: subprocess.Popen | None = None

    def _as_owner(self) -> dict:
        if self.account is None:
            return {}
        return {"user": self.account.pw_uid, "group": self.account.pw_gid, "extra_groups": []}

    def init(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.account:
            os.chown(self.directory, self.account.pw_uid, self.account.pw_gid)
        subprocess.run([str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                        "-E", "UTF8", "--no-sync", "--no-instructions"], check=True, capture_output=True,
                       cwd=self.directory, **self._as_owner())

    def start(self) -> None:
        log = open(self.log, "ab")
        self.process = subprocess.Popen(
            [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.directory),
             "-c", f"listen_addresses={IP}", "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "max_connections=200"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.directory,
            preexec_fn=die_with_parent, **self._as_owner())
        log.close()
        wait_until(self.accepting, 30, f"PostgreSQL on port {self.port}:\n{tail(self.log)}", interval=0.05)

    def accepting(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            raise AssertionError(f"PostgreSQL exited:\n{tail(self.log)}")
        return self.is_up()

    def is_up(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            return False
        try:
            with psycopg.connect(self.dsn("postgres"), connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def stop(self) -> None:
        """Fast shutdown (SIGINT): open transactions are aborted and every client is disconnected."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=30)

    def restart(self) -> None:
        self.stop()
        self.start()

    def dsn(self, dbname: str) -> str:
        return f"host={IP} port={self.port} user=postgres dbname={dbname}"

    def url(self, dbname: str) -> str:
        return f"postgres://postgres@{IP}:{self.port}/{dbname}"

    def execute(self, sql: str, dbname: str = "postgres") -> None:
        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            conn.execute(sql)


class Sql:
    """Read-only questions to one private database; a new connection each time (it gets restarted)."""

    def __init__(self, dsn: str):
        self.dsn = dsn

    def rows(self, query: str, *params) -> list[tuple]:
        with psycopg.connect(self.dsn, connect_timeout=5) as conn:
            return conn.execute(query, params).fetchall()

    def value(self, query: str, *params):
        rows = self.rows(query, *params)
        return rows[0][0] if rows else None

    def statuses(self) -> dict[str, int]:
        return dict(self.rows("SELECT status, count(*) FROM audits_audit GROUP BY status"))


# --- Redis ----------------------------------------------------------------------------------

class PrivateRedis:
    """A redis-server on a free port. Without persistence by default: a restart loses every queued
    message, the harshest broker failure (production runs Redis with AOF, see docker-compose.yml)."""

    def __init__(self, directory: Path, persistent: bool = False):
        self.directory = directory
        self.port = free_port()
        self.persistent = persistent
        self.log = directory / "redis.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", IP, "--save", "",
             "--appendonly", "yes" if self.persistent else "no", "--dir", str(self.directory),
             "--logfile", str(self.log)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent)
        wait_until(self.is_up, 20, f"Redis on port {self.port}:\n{tail(self.log)}", interval=0.05)

    def is_up(self) -> bool:
        try:
            return self.client().ping()
        except redis_client.ConnectionError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)

    def restart(self) -> None:
        self.stop()
        self.start()

    def client(self, db: int = 0) -> redis_client.Redis:
        return redis_client.Redis(host=IP, port=self.port, db=db, socket_timeout=2, socket_connect_timeout=2)

    def url(self, db: int = 0) -> str:
        return f"redis://{IP}:{self.port}/{db}"


# --- the app's processes --------------------------------------------------------------------

# The recovery windows env_for shortens; production_timing() takes them out again.
SHORT_RECOVERY = ("AUDIT_HEARTBEAT_SECONDS", "AUDIT_LEASE_SECONDS", "REAPER_INTERVAL_SECONDS",
                  "AUDIT_RESEND_AFTER_SECONDS")


def production_timing(env: dict) -> dict:
    """The app's own heartbeat, lease, reaper interval and resend delay (settings.py defaults), for tests
    that measure recovery times as a deployment sees them."""
    for name in SHORT_RECOVERY:
        env.pop(name, None)
    return env


def env_for(database_url: str, redis_url: str, var_dir: Path, **overrides) -> dict[str, str]:
    """The environment of every app process: the private services, short recovery windows."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("CELERY_", "DATABASE_", "REDIS_", "AUDIT_", "PYTEST", "DJANGO_"))}
    env.update({
        "DATABASE_URL": database_url, "REDIS_URL": redis_url, "TLSAUDIT_VAR_DIR": str(var_dir),
        "TLSAUDIT_DEV": "1", "TLSAUDIT_ALLOW_PRIVATE_TARGETS": "1", "PYTHONUNBUFFERED": "1",
        "DJANGO_SETTINGS_MODULE": "tlsaudit.settings", "LOG_LEVEL": "INFO",
        # Recovery in fewer seconds: the reaper every second, a run silent for 4 s is lost, a queued audit is
        # resent after 8 s (production: 3 s, 15 s, 15 min); tests that measure use production_timing().
        "AUDIT_HEARTBEAT_SECONDS": "1", "AUDIT_LEASE_SECONDS": "4", "REAPER_INTERVAL_SECONDS": "1",
        "AUDIT_RESEND_AFTER_SECONDS": "8", "AUDIT_QUEUE_TIMEOUT_SECONDS": "600",
        "AUDIT_SOFT_TIME_LIMIT": "60", "AUDIT_HARD_TIME_LIMIT": "90",
        # Fifty audits from one organization are this test's load, not abuse.
        "AUDIT_LIMIT_PER_ORG_HOUR": "1000", "AUDIT_LIMIT_PER_TARGET": "1000",
    })
    env.update({key: str(value) for key, value in overrides.items()})
    return env


class Proc:
    """One app process, in its own process group (a worker's pool children with it); output to a log."""

    def __init__(self, name: str, argv: list[str], env: dict, log: Path):
        self.name, self.log = name, log
        self.nodename = ""  # a Celery worker's name@host
        with open(log, "ab") as out:
            self.popen = subprocess.Popen(argv, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True,
                                          preexec_fn=die_with_parent)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for_output(self, text: str, timeout: float) -> None:
        def seen():
            if not self.alive():
                raise AssertionError(f"{self.name} exited with {self.popen.returncode}:\n{tail(self.log)}")
            return text in self.output()
        wait_until(seen, timeout, f"{self.name} to print {text!r}:\n{tail(self.log)}", interval=0.2)

    def children(self) -> list[int]:
        path = Path(f"/proc/{self.pid}/task/{self.pid}/children")
        return [int(pid) for pid in path.read_text().split()] if path.exists() else []

    def kill(self) -> None:
        """SIGKILL the whole group at once, as when a machine or container dies: no clean-up runs."""
        with_leftovers_killed(self.pid)
        self.popen.wait(timeout=10)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
        if self.alive():
            os.killpg(self.pid, sig)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.popen.wait(timeout=10)
        with_leftovers_killed(self.pid)


def with_leftovers_killed(pgid: int) -> None:
    # Pool children outlive a SIGKILLed parent for a moment: end what remains of this group.
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def shipped_flags(pool: str) -> list[str]:
    """The flags of the Procfile's worker running `pool` (threads: `worker`, the scan pool; prefork:
    `jobs`), without the ones a test sets itself (-Q, -c, -n, the log level)."""
    entry = "worker" if pool == "threads" else "jobs"
    line = next(text for text in (ROOT / "Procfile").read_text().splitlines() if text.startswith(f"{entry}:"))
    # Global options (`--quiet`, for make run's console) come before `worker`; the worker's flags after it.
    words = re.split(r"celery -A workers (?:--quiet )?worker", line, maxsplit=1)[1].split()
    flags, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in ("-Q", "--queues", "-c", "--concurrency", "-n", "--hostname", "--loglevel", "-l"):
            skip = True
        else:
            flags.append(word)
    return flags if any(w in ("--pool", "-P") for w in flags) else ["-P", "prefork", *flags]


class App:
    """The app's processes for one test, on the private PostgreSQL and Redis."""

    def __init__(self, env: dict, log_dir: Path):
        self.env, self.log_dir = env, log_dir
        self.procs: list[Proc] = []

    def spawn(self, name: str, argv: list[str], **env) -> Proc:
        proc = Proc(name, argv, {**self.env, **{key: str(value) for key, value in env.items()}},
                    self.log_dir / f"{name}.log")
        self.procs.append(proc)
        return proc

    def worker(self, name: str, queues=("scan", "default"), concurrency: int = 2, wait: bool = True,
               container: bool = False, pool: str = "prefork", as_shipped: bool = False, **env) -> Proc:
        """A Celery worker with the prefork pool (or `pool="threads"`: the scan pool of docker-compose.yml);
        `as_shipped`: with the flags the Procfile gives the worker of that pool (shipped_flags), not the
        tests' quiet ones;
        `wait` until it consumes. `container`: in its own pid namespace (unshare), as in another container
        or on another machine: the others cannot see its processes (needs root, as the private
        PostgreSQL's start-up does here)."""
        isolated = ["unshare", "--pid", "--fork", "--mount-proc"] if container else []
        flags = shipped_flags(pool) if as_shipped else ["-P", pool, "--without-mingle", "--without-gossip"]
        proc = self.spawn(name, [*isolated, PYTHON, "-m", "celery", "-A", "workers", "worker", *flags,
                                 "-c", str(concurrency), "-Q", ",".join(queues), "-n", f"{name}@%h", "-l", "INFO"],
                          **env)
        proc.nodename = f"{name}@{socket.gethostname()}"
        if wait:
            proc.wait_for_output(" ready.", timeout=90)
        return proc

    def beat(self, name: str = "beat", python_code: str | None = None, wait: bool = True, **env) -> Proc:
        """Celery beat with django-celery-beat's DatabaseScheduler (workers/celery.py); `python_code`
        replaces `python -m celery` (e.g. to start beat at another time of day)."""
        launcher = [PYTHON, "-c", python_code] if python_code else [PYTHON, "-m", "celery"]
        proc = self.spawn(name, [*launcher, "-A", "workers", "beat", "-l", "INFO"], **env)
        if wait:
            proc.wait_for_output("beat: Starting", timeout=60)
        return proc

    def web(self) -> tuple[Proc, str]:
        port = free_port()
        proc = self.spawn("web", [PYTHON, "-m", "gunicorn", "tlsaudit.wsgi", "--bind", f"{IP}:{port}",
                                  "--workers", "2", "--timeout", "30", "--access-logfile", "-"])
        base = f"http://{IP}:{port}"
        wait_until(lambda: port_accepts(port) or not proc.alive(), 60, f"gunicorn on {port}")
        assert proc.alive(), tail(proc.log)
        return proc, base

    def django(self, code: str) -> dict:
        """Run `code` in a fresh Django process of the app; it prints one JSON line, returned here."""
        result = subprocess.run([PYTHON, "-c", "import django; django.setup()\n" + code], env=self.env, cwd=ROOT,
                                capture_output=True, text=True, timeout=120)
        if result.returncode:
            raise AssertionError(f"app code failed:\n{result.stdout}\n{result.stderr}")
        return json.loads(result.stdout.strip().splitlines()[-1])

    def kill_all(self) -> None:
        for proc in reversed(self.procs):
            proc.kill()
            with_leftovers_killed(proc.pid)


def port_accepts(port: int) -> bool:
    try:
        with socket.create_connection((IP, port), timeout=0.3):
            return True
    except OSError:
        return False


def active_tasks(redis_url: str, nodename: str) -> list[dict]:
    """What the worker says it runs right now (`celery inspect active`), each with its pool child's pid."""
    from celery import Celery

    probe = Celery("faults-probe", broker=redis_url)
    try:
        replies = probe.control.inspect(destination=[nodename], timeout=2.0).active() or {}
    except redis_client.ConnectionError:
        return []  # a connection the private Redis dropped (restarted by an earlier test): callers poll again
    finally:
        probe.close()
    return replies.get(nodename, [])


# --- a slow road to a lab server --------------------------------------------------------------

class DelayProxy:
    """A TCP relay to `127.0.0.1:upstream` that holds each new connection `delay` seconds first:
    a scan through it takes long enough to kill its worker mid-way. Set `delay = 0` to speed up."""

    def __init__(self, upstream: int, delay: float):
        self.upstream, self.delay = upstream, delay
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((IP, 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self.connections = 0
        self.sockets: list[socket.socket] = []

    def serve(self) -> None:
        self.listener.settimeout(0.1)
        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.connections += 1
            self.sockets.append(client)
            threading.Thread(target=self.relay, args=(client,), daemon=True).start()

    def relay(self, client: socket.socket) -> None:
        if self.stopped.wait(self.delay):
            return
        try:
            upstream = socket.create_connection((IP, self.upstream), timeout=5)
        except OSError:
            client.close()
            return
        self.sockets.append(upstream)
        selector = selectors.DefaultSelector()
        selector.register(client, selectors.EVENT_READ, upstream)
        selector.register(upstream, selectors.EVENT_READ, client)
        try:
            while not self.stopped.is_set():
                for key, _ in selector.select(timeout=0.2):
                    data = key.fileobj.recv(65536)
                    if not data:
                        return
                    key.data.sendall(data)
        except OSError:
            pass
        finally:
            selector.close()
            client.close()
            upstream.close()


@contextmanager
def delay_proxy(upstream: int, delay: float):
    proxy = DelayProxy(upstream, delay)
    thread = threading.Thread(target=proxy.serve, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.stopped.set()
        thread.join(2)
        proxy.listener.close()
        for sock in proxy.sockets:
            sock.close()
