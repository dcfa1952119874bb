"""Fixtures of the fault tests: a private PostgreSQL and Redis for the session (migrated once into a
template database), and per test a fresh database copied from it, an emptied Redis and the app's
processes, stopped at the end. See support.py."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.faults.support import PYTHON, ROOT, App, PrivatePostgres, PrivateRedis, Sql, env_for, tail

TEMPLATE_DB = "app_template"
_numbers = itertools.count(1)


@dataclass
class Services:
    pg: PrivatePostgres
    redis: PrivateRedis
    directory: Path


@pytest.fixture(scope="session")
def private_services():
    directory = Path(tempfile.mkdtemp(prefix="tlsaudit-faults-"))
    directory.chmod(0o755)
    pg = PrivatePostgres(directory / "pg")
    redis = PrivateRedis(directory / "redis")
    try:
        pg.init()
        pg.start()
        redis.start()
        pg.execute(f"CREATE DATABASE {TEMPLATE_DB}")
        env = env_for(pg.url(TEMPLATE_DB), redis.url(), directory / "var")
        migrated = subprocess.run([PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"], env=env, cwd=ROOT,
                                  capture_output=True, text=True, timeout=300)
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr
        yield Services(pg, redis, directory)
    finally:
        redis.stop()
        pg.stop()
        shutil.rmtree(directory, ignore_errors=True)


@dataclass
class Faults:
    """One test's world: `app` starts processes, `sql` reads the database, `pg`/`redis` take faults."""

    pg: PrivatePostgres
    redis: PrivateRedis
    app: App
    sql: Sql
    env: dict
    logs: Path
    dbname: str
    notes: list[str] = field(default_factory=list)


@pytest.fixture
def faults(private_services, tmp_path):
    pg, redis = private_services.pg, private_services.redis
    if not pg.is_up():  # a previous test left it stopped on failure
        pg.start()
    if not redis.is_up():
        redis.start()
    dbname = f"faults_{next(_numbers)}"
    pg.execute(f"CREATE DATABASE {dbname} TEMPLATE {TEMPLATE_DB}")
    redis.client().flushall()
    logs = tmp_path / "logs"
    logs.mkdir()
    env = env_for(pg.url(dbname), redis.url(), tmp_path / "var")
    world = Faults(pg, redis, App(env, logs), Sql(pg.dsn(dbname)), env, logs, dbname)
    try:
        yield world
    finally:
        world.app.kill_all()
        for proc in world.app.procs:  # shown by pytest when the test failed
            print(f"----- {proc.name} (exit {proc.popen.returncode}) -----\n{tail(proc.log, 60)}")
        for note in world.notes:
            print(note)
        if not pg.is_up():
            pg.start()
        pg.execute(f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)")
