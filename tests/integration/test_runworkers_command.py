"""``manage.py runworkers`` refuses bad arguments with a clear message before starting anything."""

import pytest
from django.core.management import CommandError, call_command


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--queues", "nowhere"], r"--queues: nowhere not in TASKS\['default'\]\['QUEUES'\]"),
        (["--queues", " , "], r"--queues needs at least one queue name, or \*"),
        (["--backend", "missing"], r"--backend 'missing'"),
        (["--grace", "-1"], r"is not a number of at least 0"),
    ],
)
def test_bad_arguments_are_refused(args, message):
    with pytest.raises(CommandError, match=message):
        call_command("runworkers", *args)


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_processes_and_concurrency_must_be_positive_whole_numbers(value):
    with pytest.raises(CommandError, match="is not a whole number of at least 1"):
        call_command("runworkers", "--processes", value)
    with pytest.raises(CommandError, match="is not a whole number of at least 1"):
        call_command("runworkers", "--concurrency", value)


def test_runworkers_runs_the_backends_checks_and_refuses_to_start(settings):
    default = settings.TASKS["default"]
    settings.TASKS = {
        "default": {**default, "OPTIONS": {**default["OPTIONS"], "redis_alias": "nowhere"}}
    }
    with pytest.raises(CommandError, match=r"leasequeue\.E003"):
        call_command("runworkers", "--burst")


@pytest.mark.parametrize(("port", "refused"), [(65534, False), (65535, True)])
def test_runworkers_refuses_metrics_ports_past_65535_before_starting(settings, port, refused):
    """Process i serves on metrics_port + i: two processes need metrics_port ≤ 65534."""
    default = settings.TASKS["default"]
    settings.TASKS = {
        "default": {**default, "OPTIONS": {**default["OPTIONS"], "metrics_port": port}}
    }
    if not refused:  # refused later, for a reason that proves the port was accepted
        with pytest.raises(CommandError, match="--queues: nowhere"):
            call_command("runworkers", "--processes", "2", "--queues", "nowhere")
        return
    with pytest.raises(CommandError) as refusal:
        call_command("runworkers", "--processes", "2", "--burst")
    assert str(refusal.value) == (
        "TASKS['default'] OPTIONS metrics_port 65535 + process index 1 = 65536 is not a TCP "
        "port: with --processes 2, metrics_port must be at most 65534."
    )
