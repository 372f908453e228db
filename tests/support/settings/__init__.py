"""Settings for the test suite: real PostgreSQL and Redis, from DATABASE_URL / REDIS_URL."""

import json
import os
from urllib.parse import urlsplit

_db = urlsplit(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test"))
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
# pytest-xdist runs the suite in several processes at once, and ``dev.py test`` runs the Django
# series side by side. Each process has test databases of its own (pytest-django adds the
# worker's id to their names; dev.py gives each series its own DATABASE_URL) and keeps its
# Redis keys under a prefix of its own, in the one Redis database of REDIS_URL. The processes a
# test starts (runworkers, daphne) inherit this environment, so they share their test's prefix.
KEY_PREFIX = os.environ.get("LEASEQUEUE_TEST_KEY_PREFIX", "lqtest") + os.environ.get(
    "PYTEST_XDIST_WORKER", ""
)

SECRET_KEY = "tests-only-not-secret"
# startproject's default is True: the tests of runworkers' logging start workers with it on.
DEBUG = os.environ.get("LEASEQUEUE_TEST_DEBUG") == "1"
USE_TZ = True
TIME_ZONE = "UTC"
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "tests.support.urls"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_leasequeue",
    # The test app (label "tests"): its models, migrations and template.
    "tests.support",
    # The demo site's app, so that its views and job are tested too (tests/example).
    "example_project.matching",
    # Apps whose tasks modules declare schedules, installed only in the workers of the periodic
    # jobs' tests (tests/periodic): elsewhere their schedules would fire in every test's workers.
    *filter(None, os.environ.get("LEASEQUEUE_TEST_APPS", "").split(",")),
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _db.path.lstrip("/") or "test",
        "USER": _db.username or "postgres",
        "PASSWORD": _db.password or "",
        "HOST": _db.hostname or "127.0.0.1",
        "PORT": str(_db.port or 5432),
    }
}
# A second database, for the test that the job table may live apart from the project's models.
DATABASES["jobs"] = {**DATABASES["default"], "NAME": f"{DATABASES['default']['NAME']}_jobs"}
CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 2},
    }
}
TASKS = {
    "default": {
        "BACKEND": "django_leasequeue.backend.LeaseQueueBackend",
        "QUEUES": ["default", "high", "low", "other", "llm"],
        # Crash tests start workers with short leases through LEASEQUEUE_OPTIONS (JSON).
        "OPTIONS": {
            "key_prefix": KEY_PREFIX,
            # A model service taking two calls at once, a thousand waiting at most.
            "queue_limits": {"llm": {"concurrency": 2, "max_pending": 1000}},
            **json.loads(os.environ.get("LEASEQUEUE_OPTIONS", "{}")),
        },
    }
}
STATIC_URL = "/static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The tests create and log in users all the time: the fast hasher Django's testing docs advise.
# PBKDF2's iterations were a quarter of a test process's CPU (py-spy, 2026-12-05).
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
ASGI_APPLICATION = "tests.support.asgi.application"
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            # redis-py 8 reads with a 5 s socket timeout by default, which races the channel
            # layer's 5 s blocking pop: an idle consumer then dies of a TimeoutError
            # (django/channels_redis#422). A longer one still notices a dead Redis.
            "hosts": [{"address": REDIS_URL, "socket_timeout": 10}],
            "prefix": f"{KEY_PREFIX}-asgi",
        },
    }
}

# The structured-logging test's workers write JSON lines here (tests/support/json_logs.py), beside
# runworkers' own stderr lines.
if os.environ.get("LEASEQUEUE_TEST_JSON_LOG"):
    LOGGING = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "tests.support.json_logs.JsonFormatter"}},
        "handlers": {
            "json": {
                "class": "logging.FileHandler",
                "filename": os.environ["LEASEQUEUE_TEST_JSON_LOG"],
                "formatter": "json",
            }
        },
        "loggers": {
            name: {"handlers": ["json"], "level": "INFO"} for name in ("django_leasequeue", "tests")
        },
    }
