"""What a queue name may be, checked wherever one is given (``QUEUES``, a task's ``queue_name``,
``runworkers --queues``, a pause), and how messages show one: cut short, because a name that is
refused may be thousands of characters long."""

from django_leasequeue.jsonargs import text_problem
from django_leasequeue.shown import shown

# The job table's queue_name column (and the paused-queue table's key) is a varchar(100).
QUEUE_NAME_MAX_LENGTH = 100


def queue_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a queue (a sentence naming it, cut short), or None."""
    if not isinstance(name, str) or not name:
        return f"A queue name is a non-empty string, not {shown(name)}."
    if len(name) > QUEUE_NAME_MAX_LENGTH:
        return (
            f"Queue name {shown(name)} is too long: at most {QUEUE_NAME_MAX_LENGTH} characters "
            "(the job table's queue_name column)."
        )
    if (problem := text_problem(name)) is not None:
        return f"Queue name {shown(name)} cannot be stored ({problem})."
    return None
