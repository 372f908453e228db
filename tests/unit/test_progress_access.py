"""Progress tokens: bound to one job id, signed with the project's key, expiring."""

import uuid

from django.test import override_settings

from django_leasequeue.progress.access import job_token, token_allows
from tests.support.viewers import aged_token, forged_token

JOB = uuid.uuid4()


def test_a_token_opens_its_own_job_only():
    token = job_token(JOB)
    assert token_allows(token, JOB)
    assert token_allows(token, str(JOB))
    assert not token_allows(token, uuid.uuid4())


def test_forged_tampered_and_missing_tokens_open_nothing():
    assert not token_allows(forged_token(JOB), JOB)
    other_job_token = job_token(uuid.uuid4())
    swapped = str(JOB) + other_job_token[len(str(JOB)) :]  # this id, another job's signature
    assert not token_allows(swapped, JOB)
    assert not token_allows("", JOB)
    assert not token_allows(None, JOB)
    assert not token_allows("garbage", JOB)


def test_tokens_expire_after_the_configured_age():
    assert token_allows(aged_token(JOB, 60), JOB)
    assert not token_allows(aged_token(JOB, 24 * 3600 + 60), JOB)
    with override_settings(LEASEQUEUE_PROGRESS_TOKEN_MAX_AGE=30):
        assert not token_allows(aged_token(JOB, 60), JOB)
        assert token_allows(aged_token(JOB, 5), JOB)
