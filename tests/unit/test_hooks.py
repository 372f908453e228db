"""Hooks without a worker: their options and checks (E030, E031), loading once per process,
and ``wrap_run`` around a call (order, the task's exception, failing hooks)."""

import asyncio
import contextlib
import logging
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_leasequeue.checks import check_hooks
from django_leasequeue.conf import BackendConfig
from django_leasequeue.hooks import (
    OPENTELEMETRY_HOOK,
    FinishOutcome,
    acall_wrapped,
    call_wrapped,
    hook_paths,
    load_hooks,
)


def _check_ids(**options):
    return [m.id for m in check_hooks("TASKS['t']", BackendConfig.from_options(options))]


def test_valid_hooks_pass_the_checks():
    assert _check_ids(hooks=["tests.support.hook_examples.TenantHook"]) == []
    assert (
        _check_ids(hooks=["tests.support.hook_examples.AsyncRecordingHook"]) == []
    )  # async twin only


@pytest.mark.parametrize(
    "path, problem",
    [
        ("tests.support.hook_examples.Missing", "cannot be imported"),
        ("no_such_module.Hook", "cannot be imported"),
        ("tests.support.hook_examples.not_a_class", "not a class"),
        ("tests.support.hook_examples.NotAHook", "defines none of the hook methods"),
        (
            "tests.support.hook_examples.NeedsArgumentsHook",
            "cannot be instantiated without arguments",
        ),
    ],
)
def test_check_e030_names_a_bad_hook_path(path, problem):
    config = BackendConfig.from_options({"hooks": ["tests.support.hook_examples.TenantHook", path]})
    [message] = check_hooks("TASKS['t']", config)
    assert message.id == "leasequeue.E030"
    assert path in message.msg and problem in message.msg


def test_check_e031_names_the_extra_when_opentelemetry_is_missing(monkeypatch):
    assert _check_ids(opentelemetry=True) == []  # installed here (the test extra)
    # As if it were not installed: importing it fails.
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    [message] = check_hooks("TASKS['t']", BackendConfig.from_options({"opentelemetry": True}))
    assert message.id == "leasequeue.E031"
    assert "django-leasequeue[otel]" in message.hint
    assert _check_ids(opentelemetry=False) == []


@pytest.mark.parametrize("value", ["tests.support.hook_examples.TenantHook", [1], [""], {"a": 1}])
def test_hooks_must_be_a_list_of_dotted_paths(value):
    with pytest.raises(ImproperlyConfigured, match=r"OPTIONS\['hooks'\]"):
        BackendConfig.from_options({"hooks": value})


def test_opentelemetry_comes_first_and_hooks_load_once_per_process():
    paths = hook_paths(["tests.support.hook_examples.TenantHook"], opentelemetry=True)
    assert paths == (OPENTELEMETRY_HOOK, "tests.support.hook_examples.TenantHook")
    hooks = load_hooks(paths)
    assert [path for path, _ in hooks.wrap_run] == list(paths)
    assert load_hooks(tuple(paths)) is hooks  # the same instances: imported once
    assert not load_hooks(()).wrap_run and not load_hooks(()).after_finish


def test_a_hook_is_built_once_per_process_and_never_by_its_checks():
    from tests.support.hook_examples import CountingHook

    path = "tests.support.hook_examples.CountingHook"
    before = CountingHook.built
    assert _check_ids(hooks=[path]) == []  # manage.py check, and runworkers before it starts
    assert _check_ids(hooks=[path]) == []
    assert CountingHook.built == before
    hooks = load_hooks((path,))
    assert load_hooks((path,)) is hooks
    assert CountingHook.built == before + 1


def test_loading_a_bad_hook_raises_naming_it():
    with pytest.raises(ImproperlyConfigured, match="NotAHook"):
        load_hooks(("tests.support.hook_examples.NotAHook",))


def test_outcomes_compare_equal_to_their_names():
    assert [str(o) for o in FinishOutcome] == [
        "succeeded",
        "failed",
        "retrying",
        "cancelled",
        "snoozed",
    ]
    assert FinishOutcome.SNOOZED == "snoozed"


class _Job:
    id = "job-1"
    task_path = "tests.support.tasks.basic.add"


def _tracing(events, name, *, fail_enter=False, fail_exit=False):
    @contextlib.contextmanager
    def wrap(job, context):
        if fail_enter:
            raise RuntimeError(f"{name} cannot enter")
        events.append(f"{name} in")
        try:
            yield
        except Exception as exc:
            events.append(f"{name} saw {exc}")
            raise
        finally:
            events.append(f"{name} out")
            if fail_exit:
                raise RuntimeError(f"{name} cannot exit")

    return (f"hooks.{name}", wrap)


def test_wrappers_nest_in_order_and_see_the_exception():
    events = []
    wrappers = [_tracing(events, "a"), _tracing(events, "b")]
    assert call_wrapped(wrappers, _Job(), None, lambda: events.append("call") or 42) == 42
    assert events == ["a in", "b in", "call", "b out", "a out"]
    events.clear()

    def boom():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        call_wrapped(wrappers, _Job(), None, boom)
    assert events == ["a in", "b in", "b saw boom", "b out", "a saw boom", "a out"]


def test_a_failing_wrapper_is_logged_by_name_and_changes_no_outcome(caplog):
    events = []
    wrappers = [
        _tracing(events, "enter_fails", fail_enter=True),
        _tracing(events, "exit_fails", fail_exit=True),
        _tracing(events, "fine"),
    ]
    with caplog.at_level(logging.ERROR, "django_leasequeue.hooks"):
        assert call_wrapped(wrappers, _Job(), None, lambda: "value") == "value"
        with pytest.raises(KeyError):
            call_wrapped(wrappers, _Job(), None, lambda: {}["missing"])
    assert "enter_fails in" not in events and "fine in" in events
    failures = [r.getMessage() for r in caplog.records]
    assert sum("hooks.enter_fails failed in wrap_run for job job-1" in f for f in failures) == 2
    assert sum("hooks.exit_fails failed in wrap_run (on exit)" in f for f in failures) == 2
    assert not any("hooks.fine" in f for f in failures)


def test_async_wrappers_may_be_async_context_managers():
    events = []

    @contextlib.asynccontextmanager
    async def async_wrap(job, context):
        events.append("async in")
        yield
        events.append("async out")

    async def call():
        events.append("call")
        return "done"

    wrappers = [("hooks.async", async_wrap), _tracing(events, "sync")]
    assert asyncio.run(acall_wrapped(wrappers, _Job(), None, call)) == "done"
    assert events == ["async in", "sync in", "call", "sync out", "async out"]
