"""``{% leasequeue_progress %}``: an accessible bar drawn from the database, wired for live use."""

import re
from html.parser import HTMLParser

import pytest
from django.template import Context, Template

from django_leasequeue.ids import uuid7
from django_leasequeue.models import Job
from django_leasequeue.progress.access import token_allows
from django_leasequeue.sql import jobs as jobs_sql
from django_leasequeue.sql.executor import execute
from tests.support.helpers import claim_one
from tests.support.tasks.basic import quick_retry

pytestmark = pytest.mark.django_db


class _Elements(HTMLParser):
    """Collects every element's attributes and the text inside each class, to query the bar."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[dict[str, str | None]] = []
        self.text_by_class: dict[str, str] = {}
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs, tag=tag)
        self.elements.append(attributes)
        if tag not in {"link", "script", "meta"}:
            self._open.append(attributes.get("class") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag not in {"link", "script", "meta"} and self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        if self._open and self._open[-1]:
            key = self._open[-1]
            self.text_by_class[key] = (self.text_by_class.get(key, "") + data).strip()

    def one(self, **wanted: str) -> dict[str, str | None]:
        found = [e for e in self.elements if all(e.get(k) == v for k, v in wanted.items())]
        assert len(found) == 1, f"{wanted}: {len(found)} elements"
        return found[0]


def _render(job, label: str = "") -> _Elements:
    source = "{% load leasequeue %}{% leasequeue_progress job label=label %}"
    html = Template(source).render(Context({"job": job, "label": label}))
    parsed = _Elements()
    parsed.feed(html)
    return parsed


@pytest.fixture
def job(backend):
    claimed = claim_one(quick_retry.enqueue(1).id, "worker-a")
    assert execute(jobs_sql.progress(claimed.lease, 30, 40, "step 30 of 40"))
    return claimed


@pytest.mark.parametrize("given_as", ["job", "task result", "uuid", "string id"])
def test_bar_shows_the_stored_progress_accessibly(job, given_as):
    given = {
        "job": lambda: Job.objects.get(pk=job.id),
        "task result": lambda: quick_retry.get_result(str(job.id)),
        "uuid": lambda: job.id,
        "string id": lambda: str(job.id),
    }[given_as]()
    page = _render(given, label="Monthly report")

    bar = page.one(role="progressbar")
    assert (bar["aria-valuemin"], bar["aria-valuemax"], bar["aria-valuenow"]) == ("0", "100", "75")
    label = page.one(id=bar["aria-labelledby"])
    assert page.text_by_class[label["class"]] == "Monthly report"
    live_region = page.one(id=bar["aria-describedby"])
    assert live_region["aria-live"] == "polite"
    assert page.text_by_class["leasequeue-progress__percent"] == "75%"
    assert page.text_by_class["leasequeue-progress__status"] == "Running"
    assert page.text_by_class["leasequeue-progress__message"] == "step 30 of 40"
    assert page.one(**{"class": "leasequeue-progress__fill"})["style"] == "width: 75%"

    root = page.one(**{"class": "leasequeue-progress"})
    assert "data-leasequeue-progress" in root
    assert token_allows(root["data-token"], job.id)
    assert root["data-status-url"] == f"/leasequeue/jobs/{job.id}/status/"
    assert root["data-websocket-path"] == f"/ws/leasequeue/jobs/{job.id}/"
    assert root["data-final"] == "false"
    assert page.one(tag="script")["src"] == "/static/leasequeue/progress.js"


def test_unknown_total_leaves_the_bar_indeterminate(backend):
    claimed = claim_one(quick_retry.enqueue(1).id, "worker-a")
    assert execute(jobs_sql.progress(claimed.lease, 5, None, "counting"))
    page = _render(claimed.id)
    assert "aria-valuenow" not in page.one(role="progressbar")
    assert "leasequeue-progress__percent" not in page.text_by_class
    assert page.text_by_class["leasequeue-progress__message"] == "counting"


def test_finished_job_is_drawn_final_at_full_width(job):
    assert execute(jobs_sql.complete(job.lease, None))
    page = _render(job.id)
    assert page.one(role="progressbar")["aria-valuenow"] == "100"
    assert page.text_by_class["leasequeue-progress__status"] == "Succeeded"
    assert page.one(**{"class": "leasequeue-progress"})["data-final"] == "true"


def test_missing_job_is_drawn_ended_and_says_so(db):
    page = _render(uuid7())
    assert page.text_by_class["leasequeue-progress__message"] == "This job does not exist."
    assert page.one(**{"class": "leasequeue-progress"})["data-final"] == "true"


@pytest.mark.parametrize("given", ["not-a-uuid", "../../etc", 42, None])
def test_something_that_cannot_be_a_job_id_is_drawn_as_a_missing_job(db, given):
    page = _render(given)
    assert page.text_by_class["leasequeue-progress__message"] == "This job does not exist."
    bar = page.one(**{"class": "leasequeue-progress"})
    assert (bar["data-final"], bar["data-status-url"], bar["data-token"]) == ("true", "", "")


def test_two_bars_for_one_job_have_distinct_element_ids(job):
    source = "{% load leasequeue %}{% leasequeue_progress job %}{% leasequeue_progress job %}"
    html = Template(source).render(Context({"job": job.id}))
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids)) == 6


def _script_error(bar: _Elements) -> dict[str, str | None] | None:
    return next(
        (e for e in bar.elements if e.get("class") == "leasequeue-progress__script-error"), None
    )


def test_with_debug_on_a_bar_whose_script_fails_to_load_says_so(job, settings):
    settings.DEBUG = True
    bar = _render(job)
    notice = _script_error(bar)
    assert notice is not None and "hidden" in notice and notice["role"] == "alert"
    script = next(e for e in bar.elements if e["tag"] == "script")
    assert f"getElementById('{notice['id']}').hidden = false" in script["onerror"]
    text = bar.text_by_class["leasequeue-progress__script-error"]
    assert "/static/leasequeue/progress.js did not load" in text and "collectstatic" in text


def test_with_debug_off_the_page_carries_no_such_notice(job, settings):
    settings.DEBUG = False
    bar = _render(job)
    assert _script_error(bar) is None
    assert "onerror" not in next(e for e in bar.elements if e["tag"] == "script")
