"""Enqueue: transactional, degraded-not-down without Redis, bulk, unique keys, bad input."""

import logging
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import connections, transaction
from django.test import override_settings
from django.utils import timezone

from django_leasequeue.exceptions import InvalidTaskArguments
from django_leasequeue.models import Job
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql import operator_actions as operator_actions_sql
from django_leasequeue.sql.executor import execute
from django_leasequeue.tasks_framework import InvalidTask, task_backends
from django_leasequeue.tasks_framework import signals as task_signals
from tests.support.helpers import try_claim, try_claim_batch, wakeups_delivered
from tests.support.servers import RedisServer
from tests.support.settings import KEY_PREFIX
from tests.support.tasks.basic import add, report

pytestmark = pytest.mark.django_db(transaction=True)

WAKEUPS = f"{KEY_PREFIX}:wakeups:default"


def test_rollback_leaves_no_job_and_no_signal(backend, redis_client):
    with pytest.raises(RuntimeError), transaction.atomic():
        add.enqueue(1, 2)
        assert redis_client.llen(WAKEUPS) == 0  # not before commit
        raise RuntimeError("the view failed")
    assert Job.objects.count() == 0
    assert redis_client.llen(WAKEUPS) == 0


def test_commit_writes_the_row_then_signals_its_id(backend, redis_client):
    with transaction.atomic():
        result = add.enqueue(1, 2)
        assert redis_client.llen(WAKEUPS) == 0
    assert Job.objects.filter(pk=result.id, status="queued").exists()
    wakeups_delivered(backend.wakeups)
    assert redis_client.lrange(WAKEUPS, 0, -1) == [result.id.encode()]


def test_enqueue_succeeds_with_redis_down_and_logs_a_warning(caplog):
    with RedisServer() as server:
        caches = {
            "default": {
                "BACKEND": "django_redis.cache.RedisCache",
                "LOCATION": server.url,
                "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 1},
            }
        }
        tasks = {
            "default": {
                "BACKEND": "django_leasequeue.backend.LeaseQueueBackend",
                "OPTIONS": {"key_prefix": "lqdown"},
            }
        }
        with override_settings(CACHES=caches, TASKS=tasks):
            first = add.enqueue(1, 1)
            assert server.process is not None
            import redis

            wakeups_delivered(task_backends["default"].wakeups)
            assert redis.Redis(port=server.port).llen("lqdown:wakeups:default") == 1
            server.stop()
            with caplog.at_level(logging.WARNING, logger="django_leasequeue"):
                second = add.enqueue(2, 2)
    assert Job.objects.filter(pk__in=[first.id, second.id]).count() == 2
    [warning] = [r for r in caplog.records if r.name == "django_leasequeue.wakeups"]
    assert warning.getMessage().startswith(
        "Redis: 1 job(s) enqueued in PostgreSQL woke no worker ("
    )
    assert warning.getMessage().endswith(
        "; wakeups are skipped and workers find jobs by polling PostgreSQL (a summary "
        "follows at growing intervals while this lasts)."
    )


def test_delayed_job_is_not_claimable_or_signalled_before_run_after(backend, redis_client):
    later = add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 2)
    wakeups_delivered(backend.wakeups)
    assert redis_client.llen(WAKEUPS) == 0
    assert try_claim_batch(worker_id="w") == []
    assert try_claim([later.id], "w") == []
    Job.objects.filter(pk=later.id).update(run_after=timezone.now() - timedelta(seconds=1))
    assert len(try_claim([later.id], "w")) == 1


def test_enqueue_many_inserts_every_job_in_order(backend, redis_client):
    results = backend.enqueue_many([(add, (i, i), {}) for i in range(1000)])
    assert [r.args for r in results] == [[i, i] for i in range(1000)]
    assert Job.objects.count() == 1000
    wakeups_delivered(backend.wakeups)
    assert redis_client.llen(WAKEUPS) == 1000
    assert len({r.id for r in results}) == 1000


@pytest.mark.parametrize("size", [1, 63, 64, 200])
def test_small_batches_insert_and_large_ones_copy_with_the_same_results(backend, size):
    """Both write paths (INSERT below COPY_FROM jobs, COPY from there) keep order, keys and
    stamps; keyed and unkeyed calls mixed."""
    calls = [(report, (n % 7,), {}) if n % 3 == 0 else (add, (n, n), {}) for n in range(size)]
    results = backend.enqueue_many(calls)
    assert [r.args for r in results] == [list(args) for _, args, _ in calls]
    rows = {str(job.pk): job for job in Job.objects.all()}
    for result in results:
        assert rows[result.id].enqueued_at == result.enqueued_at
    keyed = [r.id for (task, _, _), r in zip(calls, results, strict=True) if task is report]
    assert len(set(keyed)) == min(len(keyed), 7)
    assert len(rows) == size - len(keyed) + len(set(keyed))


def test_unique_key_returns_the_unfinished_job_instead_of_a_second(backend):
    first = report.enqueue(7)
    again = report.enqueue(7)
    other = report.enqueue(8)
    assert again.id == first.id
    assert other.id != first.id
    assert Job.objects.filter(unique_key="report:7").count() == 1
    both = backend.enqueue_many([(report, (9,), {}), (report, (9,), {})])
    assert both[0].id == both[1].id
    execute(operator_actions_sql.cancel([first.id]))
    assert report.enqueue(7).id != first.id  # a finished job no longer holds its key


def test_static_unique_key_through_using(backend):
    first = add.using(priority=1).enqueue(1, 1)
    from django_leasequeue.task import LeaseTask

    assert isinstance(add, LeaseTask)
    keyed = add.using(unique_key="nightly")
    assert keyed.enqueue(1, 1).id == keyed.enqueue(2, 2).id != first.id


@pytest.mark.parametrize(
    ("args", "kwargs", "named"),
    [
        ((object(),), {}, "args[0]"),
        ((1, timezone.now()), {}, "args[1]"),
        ((), {"ratio": float("nan")}, "kwargs['ratio']"),
        ((), {"lookup": {1: "a"}}, "kwargs['lookup']"),
        ((b"\xff",), {}, "args[0]"),
    ],
)
def test_non_json_arguments_are_refused_naming_the_argument(backend, args, kwargs, named):
    with pytest.raises(InvalidTaskArguments, match=named.replace("[", r"\[")):
        add.enqueue(*args, **kwargs)
    assert Job.objects.count() == 0


def _nested(depth: int, kind: type = list):
    value: object = 1
    for _ in range(depth):
        value = [value] if kind is list else {"k": value}
    return value


@pytest.mark.parametrize(
    ("args", "kwargs", "problem"),
    [
        ((_nested(1500),), {}, r"args\[0\] = <a list nested deeply> .*nested more than 100"),
        ((), {"tree": _nested(600, dict)}, r"kwargs\['tree'\] .*nested more than 100"),
        (("a\x00b",), {}, r"args\[0\] .*NUL character"),
        ((), {"note": "\x00"}, r"kwargs\['note'\] .*NUL character"),
        (("\ud800",), {}, r"lone surrogate U\+D800 at args\[0\], character 0\)"),
        ((), {"a": ["ok", "x\udc80"]}, r"U\+DC80 at kwargs\['a'\]\[1\], character 1\)"),
        ((10**5000,), {}, r"args\[0\] = <an integer of .* more than 4,300 digits"),
        (({1: "a"},), {}, r"args\[0\] .*dictionary key 1 that is not a string"),
        (([0.5, float("nan")],), {}, r"nan \(JSON has no NaN or infinity\) at args\[0\]\[1\]"),
    ],
)
def test_arguments_that_could_not_be_stored_or_read_back_are_refused(
    backend, args, kwargs, problem
):
    with pytest.raises(InvalidTaskArguments, match=problem):
        add.enqueue(*args, **kwargs)
    assert Job.objects.count() == 0


def test_nesting_up_to_the_documented_limit_is_accepted(backend):
    assert add.enqueue(_nested(98), _nested(98, dict)).args[0] == _nested(98)


def test_arguments_over_max_argument_bytes_are_refused_with_size_and_limit(settings):
    default = settings.TASKS["default"]
    tasks = {"default": {**default, "OPTIONS": {**default["OPTIONS"], "max_argument_bytes": 1000}}}
    with override_settings(TASKS=tasks):
        with pytest.raises(InvalidTaskArguments, match=r"1,0\d\d bytes as JSON, over the limit"):
            add.enqueue("x" * 1000, 1)
        assert add.enqueue("x" * 900, 1).args[1] == 1
    assert Job.objects.count() == 1


def test_the_default_limit_is_one_mebibyte_and_none_lifts_it(backend):
    assert backend.config.max_argument_bytes == 1024 * 1024
    with pytest.raises(InvalidTaskArguments, match="over the limit of 1,048,576"):
        add.enqueue("x" * (1024 * 1024), 1)


def test_unique_keys_too_long_or_unstorable_are_refused_before_the_database(backend):
    long_key = add.using(unique_key="k" * 256)
    with pytest.raises(InvalidTaskArguments, match="at most 255 characters"):
        long_key.enqueue(1, 1)
    with pytest.raises(InvalidTaskArguments, match=r"NUL character \(\\x00\) at character 1"):
        add.using(unique_key="a\x00b").enqueue(1, 1)
    with pytest.raises(InvalidTaskArguments, match="lone surrogate U\\+DC80 at character 2"):
        add.using(unique_key="ab\udc80").enqueue(1, 1)
    assert add.using(unique_key="k" * 255).enqueue(1, 1).id
    assert Job.objects.count() == 1


def test_one_bad_call_in_a_bulk_enqueue_writes_nothing(backend):
    with pytest.raises(InvalidTaskArguments, match=r"args\[0\]"):
        backend.enqueue_many([(add, (1, 2), {}), (add, (set(),), {})])
    assert Job.objects.count() == 0


def test_unknown_queue_and_priority_out_of_range_are_refused(backend):
    with pytest.raises(InvalidTask, match="Queue 'nowhere' is not valid"):
        add.using(queue_name="nowhere").enqueue(1, 2)
    with pytest.raises(InvalidTask, match="priority must be a whole number between -100 and 100"):
        add.using(priority=101).enqueue(1, 2)
    with pytest.raises(InvalidTask, match="max_attempts must be a whole number"):
        add.using(max_attempts=0)
    assert Job.objects.count() == 0


async def test_aenqueue_inserts_and_returns_the_result(backend):
    result = await add.aenqueue(2, 3)
    fetched = await backend.aget_result(result.id)
    assert (fetched.args, fetched.status) == ([2, 3], "READY")
    await sync_to_async(connections.close_all)()


@pytest.mark.django_db(transaction=True)
def test_nothing_after_the_commit_raises_into_the_caller(settings, caplog):
    """A cache alias that is not django-redis, and a task_enqueued receiver that fails: the
    job is enqueued, the caller gets its result, and both problems are logged."""
    from django_leasequeue.tasks_framework import task_enqueued

    default = settings.TASKS["default"]
    caches = {
        **settings.CACHES,
        "plain": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }
    tasks = {"default": {**default, "OPTIONS": {**default["OPTIONS"], "redis_alias": "plain"}}}

    def broken_receiver(**kwargs):
        raise RuntimeError("a receiver failed")

    task_enqueued.connect(broken_receiver)
    try:
        with override_settings(CACHES=caches, TASKS=tasks), caplog.at_level(logging.WARNING):
            result = add.enqueue(1, 2)
    finally:
        task_enqueued.disconnect(broken_receiver)
    assert Job.objects.filter(pk=result.id).exists()
    assert "woke no worker" in caplog.text and "a receiver failed" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_the_wakeup_is_out_before_task_enqueued_receivers_run():
    """A slow task_enqueued receiver (a remote log, an audit write) does not hold back the
    job's pickup: when receivers run, the wakeup has been sent to Redis."""
    import redis

    from django_leasequeue.tasks_framework import task_enqueued

    with RedisServer() as server:
        tasks = {
            "default": {
                "BACKEND": "django_leasequeue.backend.LeaseQueueBackend",
                "OPTIONS": {"key_prefix": "lqorder"},
            }
        }
        client = redis.Redis(port=server.port)
        seen_by_receiver = []

        def receiver(task_result, **kwargs):
            wakeups_delivered(task_backends["default"].wakeups)  # what was sent before now
            seen_by_receiver.append(client.lrange("lqorder:wakeups:default", 0, -1))

        task_enqueued.connect(receiver)
        try:
            with override_settings(CACHES=server.caches(), TASKS=tasks):
                result = add.enqueue(1, 2)
        finally:
            task_enqueued.disconnect(receiver)
    assert seen_by_receiver == [[result.id.encode()]]


@pytest.mark.parametrize(
    ("args", "kwargs", "problem"),
    [((1,), {}, "missing a required argument: 'b'"), ((1, 2, 3), {}, "too many positional")],
)
def test_arguments_that_do_not_fit_the_signature_are_refused_at_enqueue(
    backend, args, kwargs, problem
):
    with pytest.raises(InvalidTaskArguments, match=problem):
        add.enqueue(*args, **kwargs)
    with pytest.raises(InvalidTaskArguments, match="unexpected keyword"):
        add.enqueue(1, 2, c=3)
    assert Job.objects.count() == 0


def test_a_task_workers_could_not_import_is_refused_at_enqueue(backend):
    from django_leasequeue import task

    def typed_into_a_shell(x):
        return x

    # What a function typed into ``manage.py shell`` (or defined in a script) looks like.
    typed_into_a_shell.__module__ = "__main__"
    typed_into_a_shell.__qualname__ = "typed_into_a_shell"
    with pytest.raises(InvalidTask, match="cannot be imported by workers"):
        task(typed_into_a_shell).enqueue(1)
    assert Job.objects.count() == 0


def test_string_keys_that_look_like_numbers_are_kept_and_real_number_keys_are_refused(backend):
    value = {"1": "a", "true": [{"null": None, "-2.5": 1}]}
    assert Job.objects.get(pk=add.enqueue(value, 1).id).args[0] == value
    with pytest.raises(InvalidTaskArguments, match="dictionary key 2 that is not a string"):
        add.enqueue({"1": "a", 2: "b"}, 1)


def test_wakeups_sent_without_replies_survive_a_redis_restart(caplog):
    """Enqueue's wakeup push waits for no reply (django_leasequeue/replyless.py): after Redis
    restarts, the closed connection is noticed before the next push, which goes out on a new
    one; while Redis is down, the push fails at once and is logged, and the job is enqueued."""
    import redis

    with RedisServer() as server:
        tasks = {
            "default": {
                "BACKEND": "django_leasequeue.backend.LeaseQueueBackend",
                "OPTIONS": {"key_prefix": "lqrestart"},
            }
        }
        with override_settings(CACHES=server.caches(), TASKS=tasks):
            wakeups = redis.Redis(port=server.port)
            first = add.enqueue(1, 1)
            wakeups_delivered(task_backends["default"].wakeups)
            assert wakeups.lrange("lqrestart:wakeups:default", 0, -1) == [first.id.encode()]
            server.stop()
            with caplog.at_level(logging.WARNING, logger="django_leasequeue"):
                down = add.enqueue(2, 2)
            assert "1 job(s) enqueued in PostgreSQL woke no worker" in caplog.text
            server.start()
            task_backends["default"].wakeups._paused_until = 0.0  # not 5 s: the test goes on
            wakeups = redis.Redis(port=server.port)
            second = add.enqueue(3, 3)
            third = add.enqueue(4, 4)
            wakeups_delivered(task_backends["default"].wakeups)
            assert wakeups.lrange("lqrestart:wakeups:default", 0, -1) == [
                second.id.encode(),
                third.id.encode(),
            ]
            # The connection answered nothing: CLIENT REPLY OFF holds after a reconnection.
            # (Three pushes: two wakeups and the marker of wakeups_delivered.)
            assert wakeups.info("commandstats")["cmdstat_rpush"]["calls"] == 3
    assert Job.objects.filter(pk__in=[first.id, down.id, second.id, third.id]).count() == 4


def test_threads_share_the_process_connection_for_wakeups():
    """Django makes a backend per thread; the wakeups of every thread go out on the one
    replyless connection of the process, not on one per thread."""
    import threading

    import redis

    with RedisServer() as server:
        tasks = {
            "default": {
                "BACKEND": "django_leasequeue.backend.LeaseQueueBackend",
                "OPTIONS": {"key_prefix": "lqthreads"},
            }
        }
        with override_settings(CACHES=server.caches(), TASKS=tasks):
            results = []

            def enqueue() -> None:
                results.append(add.enqueue(1, 1).id)
                connections.close_all()

            threads = [threading.Thread(target=enqueue) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            add.enqueue(2, 2)
            wakeups_delivered(task_backends["default"].wakeups)
            client = redis.Redis(port=server.port)
            assert client.llen("lqthreads:wakeups:default") == 5
            pushers = [c for c in client.client_list() if c["cmd"] == "rpush"]
            assert len(pushers) == 1
    assert Job.objects.filter(pk__in=results).count() == 4


# Run in a process of its own: forking pytest's, which has threads, risks a deadlocked child.
_FORKED_PUSH = """
import json, os, select, sys, time
import redis
from django_leasequeue import replyless

client = redis.Redis(port=int(sys.argv[1]))
replyless.sender.send(client, [("RPUSH", "lqfork", "parent")])
sent_r, sent_w = os.pipe()
done_r, done_w = os.pipe()
child = os.fork()
if child == 0:  # send, then hold the connection open until the parent has looked
    os.close(sent_r)
    os.close(done_w)
    status = b"failed"
    try:
        replyless.sender.send(client, [("RPUSH", "lqfork", "child")])
        status = b"sent"
    finally:
        os.write(sent_w, status)
        os.read(done_r, 1)
        os._exit(0)
os.close(sent_w)
os.close(done_r)
ready, _, _ = select.select([sent_r], [], [], 10)
status = os.read(sent_r, 16).decode() if ready else "no word from the child"
deadline = time.monotonic() + 5
while b"child" not in client.lrange("lqfork", 0, -1) and time.monotonic() < deadline:
    time.sleep(0.01)
pushers = sum(1 for c in client.client_list() if c["cmd"] == "rpush")
os.write(done_w, b"x")
_, wait_status = os.waitpid(child, 0)
replyless.sender.send(client, [("RPUSH", "lqfork", "parent again")])
exit_code = os.waitstatus_to_exitcode(wait_status)
print(json.dumps({"child": status, "exit": exit_code, "pushers": pushers}))
"""


def test_a_forked_child_sends_its_wakeups_on_a_connection_of_its_own():
    """A child forked after the parent sent a wakeup (a pre-forking web server's workers)
    must not write into the parent's socket: its pushes go out on a connection it opens."""
    import json
    import subprocess
    import sys

    import redis

    with RedisServer() as server:
        run = subprocess.run(
            [sys.executable, "-c", _FORKED_PUSH, str(server.port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout) == {"child": "sent", "exit": 0, "pushers": 2}
        client = redis.Redis(port=server.port)
        assert client.lrange("lqfork", 0, -1) == [b"parent", b"child", b"parent again"]


def test_task_enqueued_is_not_built_for_a_quiet_logger_alone(backend, caplog):
    """With only Django's own receiver connected (it logs at DEBUG), enqueue sends
    task_enqueued exactly when that logger would write the line."""
    tasks_logger = task_signals.logger.name  # django.tasks, or django_tasks on Django 5.2
    with caplog.at_level(logging.INFO, logger=tasks_logger):
        add.enqueue(1, 1)
    assert "enqueued backend=" not in caplog.text
    with caplog.at_level(logging.DEBUG, logger=tasks_logger):
        result = add.enqueue(2, 2)
    assert (
        f"Task id={result.id} path=tests.support.tasks.basic.add enqueued backend=default"
        in caplog.text
    )


@pytest.mark.parametrize("conn_max_age", [0, 60])
def test_the_plain_insert_stores_what_the_full_one_does(backend, conn_max_age, monkeypatch):
    """One job with no unique key or limits takes the short INSERT (enqueue_plain), or on a
    connection that outlives requests the same INSERT through a function whose plan the session
    keeps (enqueue_plain_cached); a keyed one the full statement (enqueue_one). Every column the
    short one leaves out reads alike."""
    monkeypatch.setitem(connections["default"].settings_dict, "CONN_MAX_AGE", conn_max_age)
    job = backend.enqueuer.new_job("0190a5c0-0000-7000-8000-000000000001", add, (1, 2), {}, {})
    assert jobs_sql.enqueue([job]).query.name == "enqueue_plain"
    assert jobs_sql.enqueue([job], cached_plan=True).query.name == "enqueue_plain_cached"
    keyed_job = job._replace(unique_key="k")
    assert jobs_sql.enqueue([keyed_job], cached_plan=True).query.name == "enqueue_one"
    plain = add.using(priority=5, queue_name="other").enqueue(1, 2)
    keyed = report.enqueue(1)  # a keyed task: the full statement
    names = [f.attname for f in Job._meta.fields]
    skip = {"id", "enqueued_at", "run_after", "unique_key", "task_path", "args", "priority"}
    skip |= {"queue_name", "max_attempts", "backoff_seconds", "timeout_seconds", "limits"}
    one, other = (Job.objects.filter(pk=pk).values(*names).get() for pk in (plain.id, keyed.id))
    assert {k: one[k] for k in names if k not in skip} == {
        k: other[k] for k in names if k not in skip
    }
    assert (one["priority"], one["queue_name"], one["args"]) == (5, "other", [1, 2])
    assert (plain.enqueued_at, keyed.enqueued_at) == (one["enqueued_at"], other["enqueued_at"])


@pytest.mark.parametrize(
    ("conn_max_age", "through_the_function"), [(0, False), (60, True), (None, True)]
)
def test_a_plain_job_takes_the_cached_plan_where_sessions_outlive_requests(
    conn_max_age, through_the_function, monkeypatch
):
    """With a connection per request (Django's default), the function's first call in each new
    session would cost more than its cached plan saves: the plain INSERT goes as it is. With
    persistent connections, it goes through the function (with a pool too:
    tests/unit/test_enqueue_statements.py). Its run_after and expiry come out as the INSERT's."""
    from django.test.utils import CaptureQueriesContext

    monkeypatch.setitem(connections["default"].settings_dict, "CONN_MAX_AGE", conn_max_age)
    run_after = timezone.now() + timedelta(minutes=5)
    with CaptureQueriesContext(connections["default"]) as queries:
        later = add.using(run_after=run_after).enqueue(1, 2)
    [sql] = [query["sql"] for query in queries.captured_queries]
    assert ("leasequeue_enqueue_plain(" in sql) is through_the_function
    assert ("INSERT INTO leasequeue_job" in sql) is not through_the_function
    row = Job.objects.get(pk=later.id)
    assert (row.run_after, row.expires_at, row.enqueued_at) == (run_after, None, later.enqueued_at)
