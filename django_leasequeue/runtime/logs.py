"""How ``runworkers`` logs: one line per record, on stderr, at the level ``-v`` asks for.

Every process (supervisor and workers) sends every record through one handler on the root
logger. Two kinds of records would otherwise reach the terminal twice or drown it:

- console handlers that Django's default logging (``DEBUG = True``, startproject's default) or the
  project's ``LOGGING`` put on loggers whose records also propagate to the root logger;
- redis-py's debug line, on every connection to a Redis older than 8, that the server does not
  know its maintenance-notifications command (``CLIENT MAINT_NOTIFICATIONS``).
"""

import logging
import sys

# The loggers of Django's Tasks framework (django.tasks on 6.x, the backport on 5.2).
TASK_LOGGERS = ("django.tasks", "django_tasks")

# redis-py's connection modules, which log that a server refused maintenance notifications.
REDIS_CONNECTION_LOGGERS = ("redis.connection", "redis.asyncio.connection")
_MAINT_NOTIFICATIONS_REFUSED = "Failed to enable maintenance notifications"


class _DropRedisMaintNotifications(logging.Filter):
    """Drops redis-py's notice that the server has no maintenance notifications (harmless:
    redis-py asks every new connection, in its default ``auto`` mode)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(_MAINT_NOTIFICATIONS_REFUSED)


_REDIS_FILTER = _DropRedisMaintNotifications()


def configure_logging(level: str, who: str) -> None:
    """Log to stderr at ``level`` (from -v), whatever levels Django's loggers carry."""
    handler = logging.StreamHandler()
    handler.setLevel(level)
    handler.setFormatter(
        logging.Formatter(f"%(asctime)s %(levelname)s [{who}] %(name)s: %(message)s")
    )
    logging.basicConfig(level=level, handlers=[handler], force=True)
    _remove_duplicate_consoles()
    # Django sets its own loggers to INFO; below -v 1 do not even build their records.
    logging.getLogger("django").setLevel(level)
    # Django's Tasks framework logs two lines per job at INFO (started, finished): at -v 1 that
    # doubles a short job's cost and floods the log, so those lines need -v 2.
    per_job = level if level == "DEBUG" else max(logging.getLevelName(level), logging.WARNING)
    for name in TASK_LOGGERS:
        logging.getLogger(name).setLevel(per_job)
    for name in REDIS_CONNECTION_LOGGERS:
        redis_logger = logging.getLogger(name)
        if _REDIS_FILTER not in redis_logger.filters:
            redis_logger.addFilter(_REDIS_FILTER)


def _remove_duplicate_consoles() -> None:
    """Remove the plain stderr/stdout handlers of loggers whose records reach the root handler
    anyway (Django's ``console`` handler on ``django`` when DEBUG is on, for one); their file,
    mail and other handlers stay, and so do those of loggers that do not propagate."""
    for logger in list(logging.root.manager.loggerDict.values()):
        if not isinstance(logger, logging.Logger) or not _reaches_root(logger):
            continue
        for handler in list(logger.handlers):
            if type(handler) is logging.StreamHandler and handler.stream in (
                sys.stderr,
                sys.stdout,
            ):
                logger.removeHandler(handler)


def _reaches_root(logger: logging.Logger) -> bool:
    node: logging.Logger | None = logger
    while node is not None and node is not logging.root:
        if not node.propagate:
            return False
        node = node.parent
    return True
