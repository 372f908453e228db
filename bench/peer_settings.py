"""Settings of the peer benchmark (bench/peers.py): the benchmark settings on their own database
(``lq_peers``, or ``LQPEERS_DATABASE``) and Redis key prefix, so that a peer run and a
``throughput.py`` run never empty each other's tables, plus

- persistent Django connections (``CONN_MAX_AGE``), so that no system opens a connection per
  job of the write benchmark (ours and Procrastinate's Django middleware close "old"
  connections around each sync job, which at the default of 0 means every job reconnects;
  Celery's Django fix-up needs its own setting, see bench/peer_apps/celery_app.py);
- Procrastinate's Django app when Procrastinate is installed (its tables come from its
  migrations).
"""

import importlib.util
import os

from bench.settings import *  # noqa: F403

DATABASES["default"]["NAME"] = os.environ.get("LQPEERS_DATABASE", "lq_peers")  # noqa: F405
DATABASES["default"]["CONN_MAX_AGE"] = 60  # noqa: F405
TASKS["default"]["OPTIONS"]["key_prefix"] = "lqpeers"  # noqa: F405

if importlib.util.find_spec("procrastinate") is not None:
    INSTALLED_APPS = [*INSTALLED_APPS, "procrastinate.contrib.django"]  # noqa: F405
    # Only our job module, not every installed app's ``tasks`` module.
    PROCRASTINATE_AUTODISCOVER_MODULE_NAME = "procrastinate_jobs"
    PROCRASTINATE_IMPORT_PATHS = ["bench.peer_apps.procrastinate_jobs"]
    # Sync tasks get --concurrency threads, as in the other systems (bench/peer_apps/threads.py).
    from bench.peer_apps.threads import procrastinate_middleware

    PROCRASTINATE_WORKER_DEFAULTS = {"worker_middleware": [procrastinate_middleware]}
