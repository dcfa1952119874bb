"""The real stack for the worker benchmarks: a PostgreSQL database, Redis, real Celery workers, /proc sampling.

Environment (the Makefile's `bench` targets set them; these are the defaults):
    DATABASE_URL  postgres://postgres@127.0.0.1:5432/tlsaudit_bench   created and migrated when missing
    REDIS_URL     redis://127.0.0.1:6379/14
The benchmarks create an organization of their own and delete it afterwards, and purge the Celery
queues of their Redis database, so both must be dedicated: the database name must contain "bench".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tests.support.tls_servers import die_with_parent

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/tlsaudit_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


# --- database and Django ----------------------------------------------------------------------------

def configure_environment() -> dict[str, str]:
    """Point this process (and the workers it starts) at the bench database and Redis; check them."""
    os.environ.setdefault("DATABASE_URL", DEFAULT_DATABASE_URL)
    os.environ.setdefault("REDIS_URL", DEFAULT_REDIS_URL)
    os.environ.update(TLSAUDIT_DEV="1", TLSAUDIT_ALLOW_PRIVATE_TARGETS="1", DJANGO_SETTINGS_MODULE="tlsaudit.settings")
    os.environ.setdefault("TLSAUDIT_VAR_DIR", str(ROOT / "var" / "bench"))
    database = urlsplit(os.environ["DATABASE_URL"])
    if database.scheme not in ("postgres", "postgresql"):
        sys.exit(f"the worker benchmarks need PostgreSQL: DATABASE_URL={os.environ['DATABASE_URL']!r}")
    if "bench" not in database.path:
        sys.exit(f"refusing DATABASE_URL {os.environ['DATABASE_URL']!r}: the benchmarks write and delete rows, "
                 "so the database name must contain 'bench' (default: tlsaudit_bench)")
    if urlsplit(os.environ["REDIS_URL"]).scheme not in ("redis", "rediss"):
        sys.exit(f"the worker benchmarks need Redis: REDIS_URL={os.environ['REDIS_URL']!r}")
    return {k: os.environ[k] for k in ("DATABASE_URL", "REDIS_URL", "TLSAUDIT_VAR_DIR")}


def ensure_database() -> None:
    """Create the bench database if it does not exist, set Django up and migrate it."""
    import psycopg

    url = urlsplit(os.environ["DATABASE_URL"])
    name = url.path.lstrip("/")
    maintenance = url._replace(path="/postgres").geturl()
    with psycopg.connect(maintenance, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
            print(f"created database {name}", file=sys.stderr)
    import django
    from django.core.management import call_command

    sys.path.insert(0, str(ROOT))
    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def bench_organization(label: str, ca_pem: str):
    """A fresh organization (trusting the fleet's CA) for one benchmark run; delete it when done.
    Its name carries our pid, so the leftovers of a killed run can be recognised and removed."""
    from tlsaudit.orgs.models import Organization

    remove_stale_organizations()
    return Organization.objects.create(name=f"bench {label} {os.getpid()} {time.time():.0f}", custom_ca_pem=ca_pem)


def remove_stale_organizations() -> None:
    from tlsaudit.orgs.models import Organization

    for org in Organization.objects.filter(name__startswith="bench "):
        parts = org.name.split()
        if len(parts) == 4 and parts[2].isdigit() and not Path(f"/proc/{parts[2]}").exists():
            org.delete()


def purge_queues(*queues: str) -> int:
    from workers.celery import app

    with app.connection_for_write() as conn:
        return sum(conn.default_channel.queue_purge(q) or 0 for q in queues)


# --- /proc ------------------------------------------------------------------------------------------

def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def rss_mib(pid: int) -> float:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_KIB / 1024
    except (OSError, IndexError):
        return 0.0


def cpu_seconds(pid: int, include_reaped: bool = True) -> float:
    """User + system CPU of `pid`, plus (by default) that of its children it has already reaped."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime + ((cutime + cstime) if include_reaped else 0)) / CLOCK_TICKS


def tree_cpu_seconds(pid: int) -> float:
    """CPU of a process, its reaped children, and its live children (e.g. a Celery pool, an nginx master)."""
    return cpu_seconds(pid) + sum(cpu_seconds(child) for child in children(pid))


def maps_contain(pid: int, needle: str) -> bool:
    try:
        return needle in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


class RssSampler(threading.Thread):
    """Every `interval_s`: the RSS of the processes that run tasks (peak of the largest) and of the
    worker with its live children (peak of the sum)."""

    def __init__(self, root: int, interval_s: float = 0.2, pool_pids=None):
        super().__init__(daemon=True)
        self.root, self.interval_s = root, interval_s
        self.pool_pids = pool_pids or (lambda: children(root))
        self.peak_child_mib = self.peak_total_mib = 0.0
        self.stopped = threading.Event()

    def sample(self) -> None:
        """peak_child: the largest process that runs tasks; peak_total: the worker and its children."""
        kids = [rss_mib(p) for p in children(self.root)]
        self.peak_child_mib = max([self.peak_child_mib, *(rss_mib(p) for p in self.pool_pids())])
        self.peak_total_mib = max(self.peak_total_mib, rss_mib(self.root) + sum(kids))

    def run(self) -> None:
        while not self.stopped.wait(self.interval_s):
            self.sample()

    def stop(self) -> None:
        self.stopped.set()
        self.join()
        self.sample()


# --- the Celery worker --------------------------------------------------------------------------

@dataclass
class WorkerOptions:
    concurrency: int = 2
    pool: str = "prefork"
    prefetch_multiplier: int | None = None       # None: workers/celery.py's setting
    max_tasks_per_child: int | None | str = "default"  # "default": workers/celery.py's; None: no recycling
    connections_per_server: int | None = None    # SCAN_CONNECTIONS_PER_SERVER for the audits
    queues: tuple[str, ...] = ("scan",)
    log_level: str = "WARNING"


def worker_command(options: WorkerOptions, name: str) -> list[str]:
    command = [sys.executable, "-m", "bench.stack", "worker",
               "--max-tasks-per-child", str(options.max_tasks_per_child), "--",
               "-A", "workers", "worker", "-Q", ",".join(options.queues), "-c", str(options.concurrency),
               "-P", options.pool, "-n", name, "--without-gossip", "--without-mingle", "-l", options.log_level]
    if options.prefetch_multiplier is not None:
        command += ["--prefetch-multiplier", str(options.prefetch_multiplier)]
    return command


class Worker:
    """A real `celery worker` in its own process group, started and waited for, stopped warm."""

    def __init__(self, options: WorkerOptions, log: Path):
        self.options = options
        self.name = f"bench-{os.getpid()}-{time.monotonic_ns()}@localhost"
        env = dict(os.environ)
        if options.connections_per_server is not None:
            env["SCAN_CONNECTIONS_PER_SERVER"] = str(options.connections_per_server)
        self.log = log
        self.log_handle = log.open("w")
        self.process = subprocess.Popen(worker_command(options, self.name), cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                        stdout=self.log_handle, stderr=subprocess.STDOUT, start_new_session=True,
                                        preexec_fn=die_with_parent)

    @property
    def pid(self) -> int:
        return self.process.pid

    def pool_pids(self) -> list[int]:
        """The processes that run tasks: the prefork children, or the worker itself with the threads pool."""
        return [self.pid] if self.options.pool == "threads" else children(self.pid)

    def wait_ready(self, timeout_s: float = 90, quiet_s: float = 0.5) -> float:
        """Until every pool process has loaded sslyze (nassl is mapped) and then used no CPU for `quiet_s`
        (its warm-up, parsing the trust stores, is over); the threads pool has neither: until it answers
        a ping. Returns the seconds waited."""
        started, quiet_since, last_cpu = time.monotonic(), None, None
        while time.monotonic() - started < timeout_s:
            if self.process.poll() is not None:
                raise RuntimeError(f"celery worker exited with {self.process.returncode}:\n{self.log_tail()}")
            if self.options.pool == "threads":  # no pool processes, no warm-up: ready when it answers
                if self.answers_ping():
                    return time.monotonic() - started
                continue
            pool = self.pool_pids()
            loaded = len(pool) >= self.options.concurrency and all(maps_contain(p, "nassl") for p in pool)
            cpu = [cpu_seconds(p) for p in pool]
            if not loaded or cpu != last_cpu:
                quiet_since, last_cpu = time.monotonic(), cpu
            elif time.monotonic() - quiet_since >= quiet_s:
                return time.monotonic() - started
            time.sleep(0.1)
        raise RuntimeError(f"celery worker not ready after {timeout_s} s:\n{self.log_tail()}")

    def answers_ping(self) -> bool:
        from workers.celery import app

        return bool(app.control.ping(destination=[self.name], timeout=0.5))

    def cpu_seconds(self) -> float:
        return tree_cpu_seconds(self.pid)

    def stop(self, timeout_s: float = 30) -> None:
        """Warm shutdown (SIGTERM), then SIGKILL to the group if it hangs."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.process.wait()
        self.log_handle.close()

    def log_tail(self, lines: int = 30) -> str:
        self.log_handle.flush()
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def run_worker(argv: list[str]) -> None:
    """`python -m bench.stack worker --max-tasks-per-child N|None|default -- CELERY ARGS`: the Celery
    app of workers/celery.py with one override Celery's CLI cannot express (no recycling at all)."""
    value = argv[argv.index("--max-tasks-per-child") + 1]
    celery_args = argv[argv.index("--") + 1:]
    from bench.cpu_profile import start_from_environment
    from workers.celery import app

    start_from_environment()  # BENCH_CPU_PROFILE=DIR: where this worker's CPU goes, thread by thread
    if value == "None":
        app.conf.worker_max_tasks_per_child = None
    elif value != "default":
        app.conf.worker_max_tasks_per_child = int(value)
    app.worker_main(celery_args[2:] if celery_args[:2] == ["-A", "workers"] else celery_args)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        sys.path.insert(0, str(ROOT))
        run_worker(sys.argv[2:])
    else:
        sys.exit("usage: python -m bench.stack worker --max-tasks-per-child N|None|default -- CELERY ARGS")
