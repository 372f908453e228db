"""A new project built from the README's snippets as written: ``startproject``, the snippets
pasted (``tests/support/docs_snippets.py`` extracts them), ``migrate``, an enqueue, the README's
``runworkers`` command, ``runserver``, and the README's progress bar moving in Chromium.

Only the newcomer's own glue is added: the database and Redis to use, an app with a page that
shows the README's bar for a ``crunch`` job, and the ``work`` that job calls.
"""

import os
import shlex
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import django
import psycopg
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from devtools.services import free_port
from tests.acceptance import harness
from tests.acceptance.harness import wait_until
from tests.support import docs_snippets
from tests.support.processes import popen_options
from tests.support.settings import KEY_PREFIX, REDIS_URL

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

README = "README.md"
PROGRESS_DOC = "docs/admin-and-progress.md"

GLUE_SETTINGS = """

# --- the newcomer's own settings: where their PostgreSQL and Redis are ---
INSTALLED_APPS += ["myapp"]
DATABASES["default"].update({database!r})
CACHES["default"]["LOCATION"] = {redis_url!r}
CHANNEL_LAYERS["default"]["CONFIG"]["hosts"] = [{redis_url!r}]
TASKS["default"]["OPTIONS"]["key_prefix"] = {key_prefix!r}
"""

GLUE_TASKS = """

# --- the newcomer's own work ---
def work(item):
    import time

    time.sleep(0.25)
"""

GLUE_VIEWS = """
from django.shortcuts import render

from myapp.tasks import crunch


def progress(request, job_id):
    return render(request, "myapp/progress.html", {"result": crunch.get_result(str(job_id))})
"""

GLUE_URLS = """

from myapp.views import progress

urlpatterns += [path("crunch/<uuid:job_id>/", progress)]
"""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Crunch</title></head>
<body>
{snippet}</body></html>
"""


def test_the_readme_and_the_progress_docs_show_one_asgi_py_and_one_settings():
    readme, docs = docs_snippets.files(README), docs_snippets.files(PROGRESS_DOC)
    assert readme["asgi.py"] == docs["asgi.py"]
    assert docs["settings.py"].split("\n", 1)[1] in readme["settings.py"]
    assert docs["urls.py"] == readme["urls.py"]


@pytest.fixture
def project_database() -> Iterator[dict[str, str]]:
    """A database of its own for the new project, next to the test database."""
    url = urlsplit(harness.test_database_url())
    name = f"{url.path.lstrip('/')}_docs"
    admin = url._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield {
        "NAME": name,
        "HOST": url.hostname or "127.0.0.1",
        "PORT": str(url.port or 5432),
        "USER": url.username or "postgres",
        "PASSWORD": url.password or "",
    }
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _build_project(root: Path, database: dict[str, str]) -> Path:
    root.mkdir()

    def manage(*args: str) -> None:
        subprocess.run([sys.executable, *args], cwd=root, check=True, env=_env())

    manage("-m", "django", "startproject", "mysite", ".")
    manage("manage.py", "startapp", "myapp")
    pasted = {
        path: docs_snippets.as_pasted(code, django.VERSION)
        for path, code in docs_snippets.files(README).items()
    }
    settings = root / "mysite" / "settings.py"
    settings.write_text(
        settings.read_text()
        + "\n\n"
        + pasted["settings.py"]
        + GLUE_SETTINGS.format(
            database=database, redis_url=REDIS_URL, key_prefix=f"{KEY_PREFIX}-docs"
        )
    )
    (root / "mysite" / "asgi.py").write_text(pasted["asgi.py"])
    urls = root / "mysite" / "urls.py"
    urls.write_text(urls.read_text() + "\n\n" + pasted["urls.py"] + GLUE_URLS)
    (root / "myapp" / "tasks.py").write_text(pasted["myapp/tasks.py"] + GLUE_TASKS)
    (root / "myapp" / "views.py").write_text(GLUE_VIEWS)
    template = root / "myapp" / "templates" / "myapp" / "progress.html"
    template.parent.mkdir(parents=True)
    snippet = docs_snippets.block_containing(README, "{% leasequeue_progress", "django")
    template.write_text(PAGE.format(snippet=snippet))
    return root


def _env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    return {**env, "PYTHONPATH": ""}


def _shell(root: Path, code: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", code],
        cwd=root,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _start(root: Path, command: list[str], log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(
            command,
            cwd=root,
            stdout=out,
            stderr=subprocess.STDOUT,
            **popen_options(_env()),
        )


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _why_not_final(root: Path, job_id: str, html: str, logs: Path) -> str:
    """What a bar that never turned final saw: the job's row, the page and both logs."""
    job = _shell(
        root,
        "from django_leasequeue.models import Job\n"
        f"print(Job.objects.filter(pk={job_id!r}).values().first())",
    )
    return "\n".join(
        [
            f"job: {job}",
            f"page: {html[:3000]}",
            *(f"{log.name}:\n{log.read_text()[-5000:]}" for log in sorted(logs.glob("*.log"))),
        ]
    )


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def test_a_project_built_from_the_readme_runs_a_job_with_a_live_bar(
    tmp_path, project_database, open_page
):
    root = _build_project(tmp_path / "newproject", project_database)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=root, env=_env(), check=True
    )
    _shell(root, "import django.core.checks")  # settings import cleanly
    # The README's enqueue lines, with the newcomer's user.
    usage = docs_snippets.block_containing(README, "send_welcome.enqueue(user.pk)", "python")
    _shell(
        root,
        "from types import SimpleNamespace\nfrom myapp.tasks import *\n"
        "user = SimpleNamespace(pk=7)\n" + usage,
    )
    job_id = _shell(
        root, "from myapp.tasks import crunch\nprint(crunch.enqueue(list(range(16))).id)"
    ).strip()

    command = docs_snippets.block_containing(README, "manage.py runworkers", "sh").strip()
    args = shlex.split(command)
    assert args[:2] == ["python", "manage.py"]
    port = free_port()
    server = _start(
        root,
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        tmp_path / "runserver.log",
    )
    workers = None
    try:
        wait_until(lambda: _answers(f"http://127.0.0.1:{port}/"), 30, "runserver")
        page = open_page()
        response = page.goto(f"http://127.0.0.1:{port}/crunch/{job_id}/")
        assert response is not None and response.ok, page.content()[:5000]
        page.evaluate(
            """window.__values = [];
            new MutationObserver(() => {
              const v = Number(document.querySelector('[role=progressbar]')
                .getAttribute('aria-valuenow'));
              if (window.__values.at(-1) !== v) window.__values.push(v);
            }).observe(document.querySelector('[role=progressbar]'), {attributes: true});"""
        )
        # The workers start once the page watches the bar: a job done before the page opened
        # (a slow runserver on a loaded machine) would show no progress to observe.
        workers = _start(root, [sys.executable, *args[1:]], tmp_path / "workers.log")
        try:
            page.wait_for_function(
                "document.querySelector('.leasequeue-progress').dataset.final === 'true'",
                timeout=120_000,  # a 4 s job; the margin is for a loaded CI machine
            )
        except PlaywrightTimeoutError:
            pytest.fail(_why_not_final(root, job_id, page.content(), tmp_path))
        values = page.evaluate("window.__values")
        status = page.locator(".leasequeue-progress__status").inner_text()
        notice_visible = page.locator(".leasequeue-progress__script-error").is_visible()
    finally:
        _stop(server)
        if workers is not None:
            _stop(workers)
    logs = (tmp_path / "workers.log").read_text() + (tmp_path / "runserver.log").read_text()
    assert status == "Succeeded", logs
    assert values == sorted(values) and len(set(values)) >= 3 and values[-1] == 100, values
    assert not notice_visible
    usage_jobs = _shell(
        root,
        "from django_leasequeue.models import Job\n"
        "print(sorted(Job.objects.values_list('task_path', 'status')))",
    )
    assert "('myapp.tasks.send_welcome', 'succeeded')" in usage_jobs, usage_jobs
    assert "('myapp.tasks.sync_account', 'succeeded')" in usage_jobs, usage_jobs
