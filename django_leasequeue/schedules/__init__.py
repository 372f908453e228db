"""Periodic jobs: tasks declared with ``cron=`` or ``every=`` are schedules.

Every worker process runs a scheduler (``runtime.scheduler``) that asks the schedule table which
schedules are due and inserts each tick's job in the same statement that advances the schedule
(a compare-and-swap on its version), so a tick has exactly one job however many workers race
for it, and no worker leads. See docs/periodic-jobs.md.
"""
