"""The job list's search box: shown, and searching by argument (``name=value``) over a bounded
recent window of the primary key, on the real PostgreSQL."""

from datetime import timedelta
from uuid import UUID

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from django_leasequeue.admin import argument_search
from django_leasequeue.models import Job
from tests.support.tasks.basic import add

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = reverse("admin:leasequeue_job_changelist")


def found(client, search: str, **params) -> set[str]:
    response = client.get(CHANGELIST, {"q": search, **params})
    assert response.status_code == 200
    return {str(job.pk) for job in response.context["cl"].result_list}


def enqueued_days_ago(days: float, **kwargs) -> str:
    """A job whose id was made ``days`` ago (ids are time-ordered: its place in the window)."""
    moment = timezone.now() - timedelta(days=days)
    job_id = UUID(int=(int(moment.timestamp() * 1000) << 80) | (0x7 << 76) | (0x2 << 62) | 1)
    Job.objects.create(id=job_id, task_path="tests.support.tasks.basic.add", kwargs=kwargs)
    return str(job_id)


def test_the_list_shows_a_search_box(admin_client):
    html = admin_client.get(CHANGELIST).content.decode()
    assert 'id="searchbar"' in html
    assert "user_id=42" in html  # the help text says how to search by argument


def test_a_name_and_value_match_exactly_in_keyword_or_a_dict_among_positional_arguments(
    admin_client,
):
    as_number = str(add.enqueue(a=42, b=0).id)
    as_string = str(add.enqueue(a="42", b=0).id)
    in_a_dict = str(add.enqueue({"a": 42, "other": 1}, 0).id)
    add.enqueue(a=420, b=0)  # another value
    add.enqueue(a=4.2, b=42)  # the value under another name
    add.enqueue(42, 0)  # a positional value, not in a dict
    add.enqueue([{"a": 42}], 0)  # a dict inside a list
    add.enqueue({"a": [42]}, 0)  # a list holding it
    add.enqueue(a={"a": 42}, b=0)  # nested under the name

    assert found(admin_client, "a=42") == {as_number, as_string, in_a_dict}
    assert found(admin_client, "a=42.0") == {as_number, in_a_dict}  # the same JSON number
    assert found(admin_client, "a=420") == {str(Job.objects.get(kwargs__a=420).pk)}


def test_several_terms_must_all_match(admin_client):
    both = str(add.enqueue(a=42, b="x@example.com").id)
    add.enqueue(a=42, b="y@example.com")
    add.enqueue(a=7, b="x@example.com")
    assert found(admin_client, "a=42 b=x@example.com") == {both}
    assert found(admin_client, 'b="x@example.com" a=42') == {both}


def test_text_values_and_literals(admin_client):
    spaced = str(add.enqueue(a="two words", b=None).id)
    true = str(add.enqueue(a=True, b=0).id)
    true_text = str(add.enqueue(a="true", b=0).id)
    assert found(admin_client, 'a="two words"') == {spaced}
    assert found(admin_client, "b=null") == {spaced}
    assert found(admin_client, "a=true") == {true, true_text}


def test_the_window_is_24_hours_by_default_and_links_widen_it(admin_client):
    today = str(add.enqueue(a=42, b=0).id)
    three_days = enqueued_days_ago(3, a=42, b=0)
    twenty_days = enqueued_days_ago(20, a=42, b=0)
    enqueued_days_ago(40, a=42, b=0)

    response = admin_client.get(CHANGELIST, {"q": "a=42"})
    assert "Searched the jobs enqueued in the last 24h" in response.content.decode()
    links = response.context["argument_search"].links
    assert [(link["name"], link["current"]) for link in links] == [
        ("24h", True),
        ("7d", False),
        ("30d", False),
    ]
    assert "q_window=7d" in links[1]["url"] and "q=a%3D42" in links[1]["url"]

    assert found(admin_client, "a=42") == {today}
    assert found(admin_client, "a=42", q_window="7d") == {today, three_days}
    assert found(admin_client, "a=42", q_window="30d") == {today, three_days, twenty_days}


def test_a_busy_window_is_searched_from_its_newest_jobs_only(admin_client, monkeypatch):
    monkeypatch.setattr(argument_search, "MAX_ROWS", 3)
    oldest = str(add.enqueue(a=42, b=0).id)
    newer = [str(add.enqueue(a=42, b=n).id) for n in range(3)]

    response = admin_client.get(CHANGELIST, {"q": "a=42"})

    assert {str(job.pk) for job in response.context["cl"].result_list} == set(newer)
    assert oldest not in {str(job.pk) for job in response.context["cl"].result_list}
    assert "Searched the newest 3 jobs enqueued in the last 24h" in response.content.decode()


def test_the_search_walks_a_primary_key_range_once(admin_client):
    job_id = str(add.enqueue(a=42, b=0).id)
    with CaptureQueriesContext(connection) as queries:
        assert found(admin_client, "a=42") == {job_id}
    over_arguments = [q["sql"] for q in queries.captured_queries if '"kwargs" @>' in q["sql"]]
    assert len(over_arguments) == 1  # the page and its count read the matches by id
    assert '"leasequeue_job"."id" >=' in over_arguments[0]
    assert "LIMIT 1001" in over_arguments[0]


def test_more_matches_than_listed_says_so(admin_client, monkeypatch):
    monkeypatch.setattr(argument_search, "MAX_MATCHES", 2)
    newest = [str(add.enqueue(a=42, b=n).id) for n in range(4)][-2:]
    response = admin_client.get(CHANGELIST, {"q": "a=42"})
    assert {str(job.pk) for job in response.context["cl"].result_list} == set(newest)
    assert "More than 2 jobs match: the newest 2 are listed." in response.content.decode()


@pytest.mark.parametrize(
    ("search", "error"),
    [
        ("a=42 oops", "'oops' is not name=value"),
        ("=42", "'=42' is not name=value"),
        ('a="42', "unclosed quote"),
    ],
)
def test_a_search_that_is_not_name_value_terms_says_why(admin_client, search, error):
    add.enqueue(a=42, b=0)
    response = admin_client.get(CHANGELIST, {"q": search})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == []
    assert any(error in str(message) for message in response.context["messages"])


def test_an_unknown_window_is_a_400(admin_client):
    response = admin_client.get(CHANGELIST, {"q": "a=42", "q_window": "9d"})
    assert response.status_code == 400
    assert "Unknown search window '9d'" in response.content.decode()


def test_the_other_searches_still_work(admin_client):
    job = add.enqueue(1, 2)
    assert found(admin_client, str(job.id)) == {str(job.id)}
    assert found(admin_client, "basic.add") == {str(job.id)}
