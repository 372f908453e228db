"""Everything through a real PgBouncer in transaction pooling mode: enqueue, runworkers, the
admin, live progress, and the kill -9 crash test. The clients use
``tests.support.settings.pgbouncer`` (server-side cursors and prepared statements off); see
docs/pgbouncer.md."""

import json
import os
import random
import signal
import time
import urllib.request

import pytest
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore

from django_leasequeue.progress.access import TOKEN_HEADER, job_token
from tests.acceptance.asgi_server import Daphne
from tests.acceptance.harness import (
    THROUGH_PGBOUNCER,
    assert_every_job_committed_exactly_once,
    django_shell,
    enqueue_work,
    unfinished,
    wait_until,
)
from tests.support.models import Receipt

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.crash]


def _get(url: str, **headers: str) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read().decode()


def _staff_session_cookie() -> str:
    user = User.objects.create_superuser("operator", "op@example.com", "not-used")
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


def test_enqueue_workers_admin_and_live_progress_through_pgbouncer(
    pgbouncer, start_workers, tmp_path
):
    server, through = pgbouncer
    enqueued = django_shell(
        through,
        "import json, random\n"
        "from tests.support.tasks.progress import stepped\n"
        "from tests.support.tasks.basic import recorded_work\n"
        "calls = [(recorded_work, (n, random.randint(20, 100)), {}) for n in range(100)]\n"
        "ids = [r.id for r in recorded_work.get_backend().enqueue_many(calls)]\n"
        "ids.append(recorded_work.enqueue(100, 50).id)\n"
        "print(json.dumps({'work': ids, 'stepped': stepped.enqueue(8, 0.3).id}))",
        **THROUGH_PGBOUNCER,
    )
    assert enqueued.returncode == 0, enqueued.stderr
    ids = json.loads(enqueued.stdout.strip().splitlines()[-1])
    daphne = Daphne(
        tmp_path / "daphne.log", database_url=through, settings="tests.support.settings.pgbouncer"
    ).start()
    try:
        start_workers(
            "--processes",
            "2",
            "--concurrency",
            "10",
            database_url=through,
            env=THROUGH_PGBOUNCER,
            # Nothing is killed here: a lease that outlasts a loaded machine's stalls, so that no
            # worker stops its job for want of a renewal (harness.FAST_OPTIONS is 1.5 s).
            options={"lease_seconds": 10, "heartbeat_seconds": 1},
        )
        # Live progress as the bar polls it: daphne reads the job through PgBouncer.
        status_url = f"{daphne.url}/leasequeue/jobs/{ids['stepped']}/status/"
        seen: list[float] = []
        deadline = time.monotonic() + 60
        state: dict = {}
        while state.get("status") != "succeeded" and time.monotonic() < deadline:
            code, body = _get(status_url, **{TOKEN_HEADER: job_token(ids["stepped"])})
            assert code == 200
            state = json.loads(body)
            current = state["current"]
            if current is not None and (not seen or current != seen[-1]):
                seen.append(current)
            time.sleep(0.1)
        assert state.get("status") == "succeeded", state
        assert len(seen) >= 3 and seen == sorted(seen) and seen[-1] == 8, seen

        wait_until(lambda: unfinished() == 0, 60, "every job to finish")
        counts = assert_every_job_committed_exactly_once(ids["work"])

        # The admin, served through PgBouncer.
        cookie = _staff_session_cookie()
        code, page = _get(f"{daphne.url}/admin/leasequeue/job/", Cookie=cookie)
        assert code == 200 and "leasequeue" in page
        job_id = ids["work"][0]
        code, page = _get(f"{daphne.url}/admin/leasequeue/job/{job_id}/change/", Cookie=cookie)
        assert code == 200 and job_id in page
    finally:
        daphne.stop()
    logins = server.log().count("login attempt: db=")
    assert logins >= 4, "the clients did not go through PgBouncer"
    print(f"through PgBouncer (transaction pooling): {counts}; {logins} client logins")


@pytest.mark.django_independent
def test_kill_9_one_worker_process_repeatedly_through_pgbouncer(pgbouncer, start_workers):
    server, through = pgbouncer
    ids = enqueue_work(240, 200, 600)
    workers = start_workers(
        "--processes", "2", "--concurrency", "10", database_url=through, env=THROUGH_PGBOUNCER
    )
    workers.wait_for_children(2)
    wait_until(lambda: Receipt.objects.count() >= 10, 30, "the workers to be busy")
    kills = 0
    deadline = time.monotonic() + 50
    while unfinished() and time.monotonic() < deadline:
        time.sleep(0.7)
        children = workers.children()
        if children and kills < 6:
            try:
                os.kill(random.choice(children), signal.SIGKILL)
                kills += 1
            except ProcessLookupError:
                pass
    wait_until(lambda: unfinished() == 0, 30, "every job to finish")
    counts = assert_every_job_committed_exactly_once(ids)
    assert kills >= 3
    assert counts["re-runs"] >= 1, "no kill hit a running job"
    assert "killed by SIGKILL" in workers.log()
    assert server.log().count("login attempt: db=") >= 4
    print(f"kill -9 x{kills} through PgBouncer: {counts}")
