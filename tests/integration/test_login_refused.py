"""Which failed connects a worker gives up on (a refused login: its start-up failed) and which
it waits out (a server that is down). Real connection attempts."""

import psycopg
import pytest
from django.db import connection

from devtools.services import free_port
from django_leasequeue.runtime.database import login_refused


def _connect_error(**overrides: object) -> psycopg.OperationalError:
    db = connection.settings_dict
    params = {
        "host": db["HOST"],
        "port": db["PORT"],
        "user": db["USER"],
        "dbname": db["NAME"],
        "connect_timeout": 5,
        **overrides,
    }
    with pytest.raises(psycopg.OperationalError) as caught:
        psycopg.connect(**params)
    return caught.value


@pytest.mark.django_db
def test_a_database_or_role_that_does_not_exist_is_a_refused_login():
    assert login_refused(_connect_error(dbname="leasequeue_no_such_database"))
    assert login_refused(_connect_error(user="leasequeue_no_such_role"))


def test_a_server_that_is_not_listening_is_waited_for():
    assert not login_refused(_connect_error(host="127.0.0.1", port=free_port()))
