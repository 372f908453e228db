"""Celery's app and tasks: Redis broker, Django's ORM through Celery's Django fix-up.

Workers: ``celery -A bench.peer_apps.celery_app worker -P threads -c 10``, twice (two processes
of ten threads: Celery's prefork pool would make ten processes, not ten slots in each of two).
Results are ignored (no result backend): fire-and-forget, Celery's cheapest setting.

Celery keeps no record of finished tasks without a result backend, so each worker process
counts its successful tasks in memory and a background thread copies the count to Redis
every 10 ms; the benchmark adds the counts up to see when a drain is done. That
costs the tasks nothing but an increment.
"""

import os
import threading
import time

from celery import Celery
from celery.signals import task_success, worker_ready

from bench.peer_apps import common

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.peer_settings")

QUEUE = "lqpeers"
DONE_KEY = "lqpeers:celery:done:"

app = Celery("lqpeers", broker=common.REDIS_URL)
app.conf.update(
    task_default_queue=QUEUE,
    task_ignore_result=True,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
    # Celery's Django fix-up closes the thread's database connection after every task, whatever
    # CONN_MAX_AGE says, unless this is set: keep connections for 1,000 tasks, as persistent as
    # the other systems' (CONN_MAX_AGE=60 in bench/peer_settings.py).
    CELERY_DB_REUSE_MAX=1000,
)


@app.task
def noop(n: int) -> None:
    pass


@app.task
def write_row(n: int) -> None:
    common.write_row(n)


@app.task
def stamp(n: int) -> None:
    common.record_start(n)


_done = 0
_done_lock = threading.Lock()


@task_success.connect
def _count_success(**_) -> None:
    global _done
    with _done_lock:
        _done += 1


def _publish_counts() -> None:
    key, published = f"{DONE_KEY}{os.getpid()}", -1
    client = common.redis_client()
    while True:
        if _done != published:
            published = _done
            client.set(key, published)
        time.sleep(0.01)


@worker_ready.connect
def _start_publisher(**_) -> None:
    threading.Thread(target=_publish_counts, name="lqpeers-done", daemon=True).start()
