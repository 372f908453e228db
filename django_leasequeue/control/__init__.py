"""Queue control at run time: pausing queues, expiring jobs that were not started in time,
snoozing a job from inside it, and unique keys held over a period.

Each rule is enforced by PostgreSQL, in the statements that claim, enqueue or end a job
(``sql/queue_control.sql`` and the claims of ``sql/jobs.sql``), never by a cache in a process:
a paused queue stays paused across restarts and Redis loss, and no worker can miss it.
"""
