"""The benchmarks' worker (bench/stack.py) is the real Celery worker, with the options it was asked for."""

import pytest

from bench.stack import Worker, WorkerOptions, children, cpu_seconds, rss_mib

pytestmark = pytest.mark.worker


@pytest.mark.parametrize("max_tasks, expected", [(None, "N/A"), (7, 7), ("default", "configured")])
def test_the_bench_worker_recycles_pool_processes_as_asked(tmp_path, max_tasks, expected):
    from workers.celery import app

    options = WorkerOptions(concurrency=1, max_tasks_per_child=max_tasks, queues=("bench_selftest",))
    with Worker(options, tmp_path / "worker.log") as worker:
        worker.wait_ready()
        stats = app.control.inspect(destination=[worker.name], timeout=10).stats() or {}
        pool = worker.pool_pids()
        assert len(pool) == 1 and rss_mib(pool[0]) > 50 and cpu_seconds(pool[0]) > 0
    assert worker.name in stats, worker.log.read_text()[-2000:]
    if expected == "configured":  # workers/celery.py's worker_max_tasks_per_child
        expected = app.conf.worker_max_tasks_per_child
    assert stats[worker.name]["pool"]["max-tasks-per-child"] == expected  # "N/A": never recycled
    assert children(worker.pid) == []  # stopped, pool and all
