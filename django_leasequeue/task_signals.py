"""Sending Django's task signals (``task_enqueued``, ``task_started``, ``task_finished``), and
whether sending one would reach anyone: used by the enqueue and, in batches, by the worker
(``runtime/signal_dispatch.py``).

Django itself connects a receiver to each signal that logs every task (at INFO; ``task_enqueued``
at DEBUG). When that is the only receiver and its logger is quiet, sending does nothing, and
``wanted`` says so: the worker then builds no TaskResult for the signal at all, and enqueue
sends no ``task_enqueued``.
"""

import logging

from django.dispatch import Signal

from django_leasequeue.tasks_framework import TaskResult
from django_leasequeue.tasks_framework import signals as django_task_signals

logger = logging.getLogger(__name__)

# Django's own logging receivers, each with the lowest level it logs at, to Django's logger.
_LOGGING_RECEIVERS = {
    django_task_signals.log_task_enqueued: logging.DEBUG,
    django_task_signals.log_task_started: logging.INFO,
    django_task_signals.log_task_finished: logging.INFO,
}


def wanted(signal: Signal, sender: type) -> bool:
    """Whether sending ``signal`` would reach a receiver that does something."""
    # Django keeps no public list of a signal's receivers for a sender (``has_listeners``
    # would build this list too).
    sync_receivers, async_receivers = signal._live_receivers(sender)
    receivers = [*sync_receivers, *async_receivers]
    if not receivers:
        return False
    if any(receiver not in _LOGGING_RECEIVERS for receiver in receivers):
        return True
    level = min(_LOGGING_RECEIVERS[receiver] for receiver in receivers)
    return django_task_signals.logger.isEnabledFor(level)


def send_task_signal(signal: Signal, sender: type, task_result: TaskResult) -> None:
    """Send a task signal; a receiver that fails is logged, never raised to the sender (the
    job's state is committed already)."""
    for receiver, response in signal.send_robust(sender, task_result=task_result):
        if isinstance(response, Exception):
            logger.error(
                "Receiver %r of a task signal failed for job %s.",
                receiver,
                task_result.id,
                exc_info=response,
            )
