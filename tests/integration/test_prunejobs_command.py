"""``manage.py prunejobs`` deletes old finished jobs only, in batches."""

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command, load_command_class
from django.utils import timezone

from django_leasequeue.models import Job
from tests.support.tasks.basic import add

pytestmark = pytest.mark.django_db(transaction=True)


def _job(status: str, finished_days_ago: float | None) -> str:
    job_id = add.enqueue(1, 2).id
    finished_at = (
        None if finished_days_ago is None else timezone.now() - timedelta(days=finished_days_ago)
    )
    Job.objects.filter(pk=job_id).update(status=status, finished_at=finished_at)
    return job_id


def test_only_old_finished_jobs_are_deleted(backend):
    old = [_job(status, 30) for status in ("succeeded", "failed", "cancelled") for _ in range(3)]
    recent = _job("succeeded", 1)
    unfinished = [_job("queued", None), _job("running", None), _job("retrying", None)]
    out = StringIO()
    call_command("prunejobs", "--days", "7", "--batch", "2", stdout=out)
    assert out.getvalue() == "Deleted 9 finished jobs older than 7 days.\n"
    remaining = {str(pk) for pk in Job.objects.values_list("pk", flat=True)}
    assert remaining == {recent, *unfinished}
    assert not remaining & set(old)


def test_status_filter_keeps_the_others(backend):
    failed, succeeded = _job("failed", 30), _job("succeeded", 30)
    call_command("prunejobs", "--days", "7", "--status", "succeeded", stdout=StringIO())
    assert {str(pk) for pk in Job.objects.values_list("pk", flat=True)} == {failed}
    assert succeeded not in {str(pk) for pk in Job.objects.values_list("pk", flat=True)}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--days", "-1"], "is not a number of at least 0"),
        (["--days", "7", "--batch", "0"], "is not a whole number of at least 1"),
        (["--days", "7", "--status", "queued"], "invalid choice: 'queued'"),
    ],
)
def test_bad_arguments_are_refused(args, message):
    with pytest.raises(CommandError, match=message):
        call_command("prunejobs", *args)


def test_a_bad_status_is_refused_with_the_choices_help_shows():
    parser = load_command_class("django_leasequeue", "prunejobs").create_parser("", "prunejobs")
    assert "{succeeded,failed,cancelled}" in parser.format_help()
    # Quoted or not, as the Python version's argparse has it; never "JobStatus.SUCCEEDED".
    choices = r"\(choose from '?succeeded'?, '?failed'?, '?cancelled'?\)$"
    with pytest.raises(CommandError, match=r"invalid choice: 'bogus' " + choices):
        call_command("prunejobs", "--days", "7", "--status", "bogus")


@pytest.mark.parametrize(
    ("days", "deleted", "line"),
    [
        ("14", 0, "Deleted 0 finished jobs older than 14 days."),
        ("1", 1, "Deleted 1 finished job older than 1 day."),
        ("0.5", 2, "Deleted 2 finished jobs older than 0.5 days."),
    ],
)
def test_the_summary_line_counts_in_words(backend, days, deleted, line):
    for _ in range(deleted):
        _job("cancelled", 30)
    out = StringIO()
    call_command("prunejobs", "--days", days, stdout=out)
    assert out.getvalue() == line + "\n"


def test_quiet_without_a_terminal(backend):
    for _ in range(30):
        _job("succeeded", 30)
    out = StringIO()
    call_command("prunejobs", "--days", "7", "--batch", "7", stdout=out)
    assert out.getvalue() == "Deleted 30 finished jobs older than 7 days.\n"


def test_progress_in_a_terminal_rows_rate_and_time_left(backend):
    """The real command in a pseudo-terminal: the line redraws with rows, rate and time left."""
    import os
    import pty
    import select
    import subprocess
    import sys

    from tests.acceptance.harness import ROOT, test_database_url

    for _ in range(60):
        _job("succeeded", 30)
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "django", "prunejobs", "--days", "7", "--batch", "10"],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.support.settings",
            "DATABASE_URL": test_database_url(),
            "PYTHONPATH": str(ROOT),
        },
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    output = b""
    while True:
        if select.select([leader], [], [], 30)[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the command exited and closed the terminal
                break
            if not chunk:
                break
            output += chunk
        else:
            break
    assert process.wait(30) == 0
    os.close(leader)
    text = output.decode()
    assert "\r\x1b[K" in text
    assert re.search(r"Deleted 60 of 60 \(100%\), [\d,]+ rows/s, about 0 s left", text), text
    assert text.rstrip().endswith("Deleted 60 finished jobs older than 7 days.")
    assert Job.objects.count() == 0
