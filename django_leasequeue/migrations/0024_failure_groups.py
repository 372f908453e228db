# The failures page (issue 38): the last error's exception class in a column of its own, and a
# covering index of failed jobs by when they failed, so that a window's failures are grouped by
# task and exception class from the index alone.

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

# Jobs that failed before this migration: their class read once from their last error.
BACKFILL = """
UPDATE leasequeue_job SET last_error_class = errors -> -1 ->> 'exception_class_path'
WHERE status = 'failed' AND finished_at IS NOT NULL AND last_error_class IS NULL
"""


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY: a live job table keeps taking claims and heartbeats meanwhile.
    atomic = False

    dependencies = [
        ("leasequeue", "0023_unique_keys_per_task"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="last_error_class",
            field=models.TextField(blank=True, null=True),
        ),
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(
                condition=models.Q(("status", "failed")),
                fields=["finished_at"],
                include=("task_path", "last_error_class", "id"),
                name="leasequeue_job_failures",
            ),
        ),
    ]
