"""Pure pieces of the bench scripts: h2load's summary, the RSS slope, the worker command line."""

import os

import pytest

from bench.handshake_vs_h2load import parse_h2load
from bench.stack import WorkerOptions, configure_environment, worker_command
from bench.worker_memory import drift, generation_peaks, slope_per_100

H2LOAD_OUTPUT = """starting benchmark...
spawning thread #0: 10 total client(s). 100 total requests
TLS Protocol: TLSv1.3
Cipher: TLS_AES_256_GCM_SHA384

finished in {finished}, 148.54 req/s, 0B/s
requests: 100 total, 100 started, {done} done, {ok} succeeded, {failed} failed, 0 errored, 0 timeout
status codes: 100 2xx, 0 3xx, 0 4xx, 0 5xx
"""


def test_it_reads_h2loads_rate_and_counts_in_milliseconds_or_seconds():
    fast = parse_h2load(H2LOAD_OUTPUT.format(finished="673.20ms", done=100, ok=100, failed=0))
    assert fast == {"wall_s": pytest.approx(0.6732), "rate": 148.54, "count": 100, "failed": 0}
    slow = parse_h2load(H2LOAD_OUTPUT.format(finished="2.90s", done=100, ok=100, failed=0))
    assert slow["wall_s"] == 2.90


def test_requests_h2load_did_not_finish_count_as_failures():
    result = parse_h2load(H2LOAD_OUTPUT.format(finished="1.5s", done=97, ok=95, failed=2))
    assert (result["count"], result["failed"]) == (95, 2 + 3)


def test_an_h2load_run_without_a_summary_is_an_error():
    with pytest.raises(ValueError, match="h2load printed no summary"):
        parse_h2load("starting benchmark...\nconnect: Connection refused\n")


@pytest.mark.parametrize("samples, slope", [
    ([150.0] * 20, 0.0),
    ([100.0 + i for i in range(50)], 100.0),      # 1 MiB per audit
    ([200.0 - 0.5 * i for i in range(10)], -50.0),
    ([123.0], 0.0),
])
def test_the_memory_slope_is_mib_per_100_audits(samples, slope):
    assert slope_per_100(samples) == pytest.approx(slope)


def test_the_bench_worker_is_the_real_celery_worker_with_the_asked_options():
    command = worker_command(WorkerOptions(concurrency=3, prefetch_multiplier=4, max_tasks_per_child=None),
                             "bench-1@localhost")
    assert command[1:5] == ["-m", "bench.stack", "worker", "--max-tasks-per-child"] and command[5] == "None"
    celery = command[command.index("--") + 1:]
    assert celery[:5] == ["-A", "workers", "worker", "-Q", "scan"]
    assert ["-c", "3"] == celery[5:7] and ["-P", "prefork"] == celery[7:9]
    assert celery[-2:] == ["--prefetch-multiplier", "4"]
    default = worker_command(WorkerOptions(), "bench-2@localhost")
    assert "--prefetch-multiplier" not in default and default[5] == "default"


def test_drift_compares_the_last_quarter_with_the_second():
    assert drift([150.0] * 40) == 0.0
    assert drift([100.0 + i for i in range(40)]) == pytest.approx(20.0)  # medians 114.5 and 134.5


def test_drift_ignores_the_saw_tooth_of_recycling():
    saw_tooth = [140.0 + (i % 10) * 3 for i in range(40)]  # recycled every 10 audits, same climb each time
    assert abs(drift(saw_tooth)) < 1


def test_each_pool_process_gets_its_own_peak():
    rss = [140.0, 150.0, 160.0, None, 135.0, 158.0, 170.0]  # None: sampled as process 1 was recycled
    pids = [(1,), (1,), (1,), (1,), (2,), (2,), (3,)]
    assert generation_peaks(rss, pids) == [160.0, 158.0, 170.0]


@pytest.mark.parametrize("variable, value, message", [
    ("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tlsaudit", "the database name must contain 'bench'"),
    ("DATABASE_URL", "sqlite:///bench.sqlite3", "the worker benchmarks need PostgreSQL"),
    ("REDIS_URL", "filesystem://", "the worker benchmarks need Redis"),
])
def test_the_worker_benchmarks_refuse_a_database_or_broker_that_is_not_theirs(monkeypatch, variable, value, message):
    for name in ("TLSAUDIT_DEV", "TLSAUDIT_ALLOW_PRIVATE_TARGETS", "DJANGO_SETTINGS_MODULE", "TLSAUDIT_VAR_DIR"):
        monkeypatch.setenv(name, os.environ.get(name, "x"))  # restored after the test
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tlsaudit_bench")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/14")
    monkeypatch.setenv(variable, value)
    with pytest.raises(SystemExit, match=message):
        configure_environment()
