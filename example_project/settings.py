"""Settings of the demo site: PostgreSQL and Redis from DATABASE_URL / REDIS_URL.

The defaults match the test suite's (``tests/support/settings/__init__.py``); ``python3 dev.py
demo`` points them at throwaway servers when nothing is listening there.
"""

import os
from pathlib import Path
from urllib.parse import urlsplit

BASE_DIR = Path(__file__).resolve().parent
_db = urlsplit(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test"))
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "demo-only-not-secret")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
USE_TZ = True

INSTALLED_APPS = [
    "daphne",  # makes ``runserver`` serve ASGI (websockets) too
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_leasequeue",
    "example_project.matching",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Each request's id, carried into the jobs it enqueues (RequestIdHook below).
    "example_project.matching.request_ids.RequestIdMiddleware",
]
ROOT_URLCONF = "example_project.urls"
ASGI_APPLICATION = "example_project.asgi.application"
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
CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        # Without a connect timeout an unreachable Redis stalls every enqueue (leasequeue.W001).
        "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 5},
    }
}
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # Above channels-redis's 5 s blocking read: redis-py 8 times reads out at 5 s, which
        # closes an idle page's websocket (django/channels_redis#422).
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 10}], "prefix": "demo-asgi"},
    }
}
TASKS = {
    "default": {
        "BACKEND": "django_leasequeue.backend.LeaseQueueBackend",
        "QUEUES": ["default"],
        "OPTIONS": {
            "key_prefix": "demo",
            "lease_seconds": 15,
            "heartbeat_seconds": 3,
            # The request id from the view to the job's log lines (docs/observability.md).
            "hooks": ["example_project.matching.request_ids.RequestIdHook"],
        },
    }
}

# How many unfinished match jobs one user may have at a time.
MATCHING_MAX_UNFINISHED_JOBS = 5
# How many projects one submission may pick.
MATCHING_MAX_SELECTION = 5
# How many import workflows one user may have running at a time.
MATCHING_MAX_RUNNING_IMPORTS = 2

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "matching:home"
LOGOUT_REDIRECT_URL = "login"
STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
