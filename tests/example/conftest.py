"""Fixtures of the demo site's tests: a user, and a client signed in as that user."""

import pytest
from django.contrib.auth import get_user_model


@pytest.fixture
def user():
    return get_user_model().objects.create_user("alice", password="secret")


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client
