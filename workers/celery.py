"""The Celery app, configured from Django settings (CELERY_* names).

Queues: `scan` (sslyze audits), `load` (load-test agents), `browser` (Chromium probes),
`default` (mail, webhooks, housekeeping). Routes are by task-name prefix so the web process
can enqueue by name without importing the engines.
"""

import os

from celery import Celery
from celery.signals import worker_init, worker_process_init
from django.conf import settings
from kombu import Queue

from workers import brokerfix

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tlsaudit.settings")

brokerfix.install()   # a Redis restart must not stop a worker
app = Celery("tlsaudit")
app.config_from_object("django.conf:settings", namespace="CELERY")

app.conf.update(
    task_queues=[Queue("default"), Queue("scan"), Queue("load"), Queue("browser")],
    task_default_queue="default",
    task_routes={
        "workers.tasks.audit.*": {"queue": "scan"},
        "workers.tasks.load.*": {"queue": "load"},
        "workers.tasks.browser.*": {"queue": "browser"},
    },
    # A task is acknowledged after it ran, and re-queued if its worker dies mid-way;
    # every task claims its row atomically, so a second delivery is harmless.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    # How long the pool waits for a result a dead child may have sent before it calls the job lost and the
    # message is redelivered (default 10 s). Results are ignored and the row is the truth (a redelivered
    # finished audit is skipped), so waiting buys nothing: the redelivery then takes the audit over.
    worker_lost_wait=1.0,
    # An audit is about a second of CPU: a reserved audit would wait behind a busy pool process while
    # another idles. Prefetching 4 gained nothing measurable (bench/throughput.py, docs/decisions.md).
    worker_prefetch_multiplier=1,
    # sslyze threads ignore soft limits (sslyze-notes 3.3): the hard limit is what stops a scan.
    task_soft_time_limit=300,
    task_time_limit=420,
    # A safety net against leaks (sslyze has had some): without it a pool process stayed at 160-225 MiB
    # over 600 audits (bench/worker_memory.py); recycling costs one warm-up per 50 tasks.
    worker_max_tasks_per_child=50,
    task_ignore_result=True,
    task_serializer="json",
    accept_content=["json"],
    timezone="UTC",
    broker_connection_retry_on_startup=True,
    # On a broker restart, running tasks finish and store their result on the row; their lost ack only
    # means a redelivery, which the row's claim skips. Cancelling them would throw finished work away.
    worker_cancel_long_running_tasks_on_connection_loss=False,
    # A new pool child imports sslyze first (warm_up below): on a busy machine that took longer than
    # billiard's default 4 s, and the child was killed and replaced in a loop.
    worker_proc_alive_timeout=30.0,
    imports=("workers.tasks",),
    beat_scheduler="workers.beat:RobustDatabaseScheduler",
    beat_schedule={
        "worker-heartbeat": {"task": "workers.tasks.ping.heartbeat", "schedule": 15.0},
        "reap-abandoned-audits": {"task": "workers.tasks.housekeeping.reap_abandoned_audits",
                                  "schedule": float(settings.REAPER_INTERVAL_SECONDS)},
        "send-webhook-retries": {"task": "workers.tasks.alerts.send_webhook_retries",
                                 "schedule": float(settings.WEBHOOK_RETRY_SWEEP_SECONDS)},
        "start-waiting-audits": {"task": "workers.tasks.schedule.start_waiting_audits",
                                 "schedule": float(settings.WAITING_AUDITS_SWEEP_SECONDS)},
    },
)


@worker_process_init.connect
def warm_up_worker(**_):
    # Import sslyze and load its trust stores once per child, not in every task.
    try:
        from workers.tls.warmup import warm_up  # here: the web process imports this module, and must not load sslyze
    except ImportError:  # engine not installed in this deployment
        return
    warm_up()
    configure_scan_gates()


@worker_init.connect
def prepare_scan_pool(sender=None, **_):
    """A threads-pool worker (the scan pool, README "Scaling the scan workers") runs its audits in
    this very process: warm sslyze up before the threads start (its trust-store singleton is not
    thread-safe) and set the process's connection limits. A prefork worker does this per child."""
    if "thread" not in str(getattr(sender, "pool_cls", "")).lower():
        return
    try:
        from workers.tls.warmup import warm_up  # here: the web process imports this module, and must not load sslyze
    except ImportError:
        return
    warm_up()
    configure_scan_gates()


def configure_scan_gates():
    from workers.net.deadline import configure_gates  # here: the scan pool's gates, set up in workers only

    return configure_gates(settings.SCAN_CONNECTIONS_PER_IP, settings.SCAN_MAX_CONNECTIONS)
