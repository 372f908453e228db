"""Migrations 0001-0023 squashed into one (nothing had been released: version 0.1.0).

A new database runs this migration alone; a database that has run some of 0001-0023 goes on
through the rest of them, and once it has run them all Django records this one as applied too
(``replaces``). The old files stay until every database is past them: they can then be deleted,
and ``replaces`` with them. They may stay meanwhile: they import one another by module path,
and nothing imports them; this migration imports none of them.

The models' tables are created as 0001-0023 left them, column for column in the same order,
with their final indexes and constraints (built plainly: on a new table there is nothing to
build CONCURRENTLY for). What the old migrations ran as SQL (the job table's fillfactor, the
foreign keys that cascade in the database, the functions and the step trigger) runs from a
frozen copy in ``migrations/sql/0001_squashed_0023.sql``: never edited, and never the current
``sql/functions/*.sql``, which a later change edits along with a migration of its own that
carries its copy. tests/integration/test_migrations.py checks that this migration and the old
chain (and a database part way along it) give the same schema.
"""

from pathlib import Path

import django.db.models.deletion
import django.db.models.functions.datetime
import django_leasequeue.ids
import django_leasequeue.models
from django.db import migrations, models

# What the frozen SQL made, dropped (the tables go with the models' operations).
REVERSE_SQL = """
DROP TRIGGER leasequeue_step_status_changed ON leasequeue_job;
DROP FUNCTION leasequeue_enqueue_plain(uuid, text, text, smallint, text, jsonb, jsonb,
                                       timestamptz, integer, float8, float8, float8, jsonb);
DROP FUNCTION leasequeue_claim_batch(text, integer, text, float8);
DROP FUNCTION leasequeue_claim_by_ids(uuid[], text, float8, boolean);
DROP FUNCTION leasequeue_complete_many(uuid[], integer[], jsonb[]);
DROP FUNCTION leasequeue_complete_steps(uuid[], integer[], jsonb[]);
DROP FUNCTION leasequeue_step_status_changed();
DROP FUNCTION leasequeue_release_children(uuid[]);
ALTER TABLE leasequeue_dependency DROP CONSTRAINT leasequeue_dependency_child_fk;
ALTER TABLE leasequeue_dependency DROP CONSTRAINT leasequeue_dependency_parent_fk;
ALTER TABLE leasequeue_job DROP CONSTRAINT leasequeue_job_workflow_fk;
ALTER TABLE leasequeue_job RESET (fillfactor);
"""
FROZEN_SQL = (Path(__file__).parent / "sql" / "0001_squashed_0023.sql").read_text()


class Migration(migrations.Migration):

    replaces = [
        ("leasequeue", "0001_initial"),
        ("leasequeue", "0002_claim_order_index"),
        ("leasequeue", "0003_admin_indexes"),
        ("leasequeue", "0004_finished_index_partial"),
        ("leasequeue", "0005_tolerant_json"),
        ("leasequeue", "0006_flow_control"),
        ("leasequeue", "0007_operators"),
        ("leasequeue", "0008_schedules"),
        ("leasequeue", "0009_workflows"),
        ("leasequeue", "0010_workflow_permissions"),
        ("leasequeue", "0011_queue_control"),
        ("leasequeue", "0012_workflow_fan_in"),
        ("leasequeue", "0013_job_meta"),
        ("leasequeue", "0014_pause_permission_of_its_own"),
        ("leasequeue", "0015_claim_heads_with_and_without_expiry"),
        ("leasequeue", "0016_steps_completed_per_statement"),
        ("leasequeue", "0017_completions_by_primary_key"),
        ("leasequeue", "0018_complete_many_plan_cached"),
        ("leasequeue", "0019_release_locks_children_by_key"),
        ("leasequeue", "0020_cached_plans_by_key"),
        ("leasequeue", "0021_claim_batch_plan_cached"),
        ("leasequeue", "0022_enqueue_plain_plan_cached"),
        ("leasequeue", "0023_unique_keys_per_task"),
    ]

    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name='WorkflowRun',
            fields=[
                ('id', models.UUIDField(default=django_leasequeue.ids.uuid7, editable=False, primary_key=True, serialize=False)),
                ('name', models.CharField(blank=True, db_default='', max_length=200)),
                ('backend', models.CharField(db_default='default', max_length=100)),
                ('status', models.CharField(choices=[('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], db_default='running', max_length=16)),
                ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('steps_total', models.PositiveIntegerField()),
                ('steps_unfinished', models.PositiveIntegerField()),
                ('steps_failed', models.PositiveIntegerField(db_default=0)),
                ('cancel_requested', models.BooleanField(db_default=False)),
            ],
            options={
                'verbose_name': 'workflow',
                'verbose_name_plural': 'workflows',
                'db_table': 'leasequeue_workflow',
                'indexes': [models.Index(condition=models.Q(('status', 'running')), fields=['created_at'], name='leasequeue_workflow_running')],
                'permissions': [('cancel_workflow', 'Can cancel a workflow'), ('retry_workflow', 'Can retry the failed steps of a workflow')],
            },
        ),
        migrations.CreateModel(
            name='Job',
            fields=[
                ('id', models.UUIDField(default=django_leasequeue.ids.uuid7, editable=False, primary_key=True, serialize=False)),
                ('task_path', models.CharField(max_length=255)),
                ('queue_name', models.CharField(db_default='default', max_length=100)),
                ('priority', models.SmallIntegerField(db_default=0)),
                ('args', django_leasequeue.models.TolerantJSONField(blank=True, default=list)),
                ('kwargs', django_leasequeue.models.TolerantJSONField(blank=True, default=dict)),
                ('backend', models.CharField(db_default='default', max_length=100)),
                ('status', models.CharField(choices=[('waiting', 'Waiting'), ('queued', 'Queued'), ('running', 'Running'), ('retrying', 'Retrying'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], db_default='queued', max_length=16)),
                ('run_after', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('enqueued_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('last_attempted_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('attempt', models.PositiveIntegerField(db_default=0)),
                ('max_attempts', models.PositiveIntegerField(db_default=3)),
                ('timeout_seconds', models.FloatField(blank=True, null=True)),
                ('backoff_seconds', models.FloatField(db_default=1.0)),
                ('worker_id', models.CharField(blank=True, max_length=100, null=True)),
                ('worker_ids', models.JSONField(blank=True, db_default=models.Value([], models.JSONField()))),
                ('lease_version', models.PositiveIntegerField(db_default=0)),
                ('lease_expires_at', models.DateTimeField(blank=True, null=True)),
                ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                ('cancel_requested', models.BooleanField(db_default=False)),
                ('unique_key', models.CharField(blank=True, max_length=255, null=True)),
                ('result', django_leasequeue.models.TolerantJSONField(blank=True, null=True)),
                ('errors', models.JSONField(blank=True, db_default=models.Value([], models.JSONField()))),
                ('progress', models.JSONField(blank=True, null=True)),
                ('checkpoint', django_leasequeue.models.TolerantJSONField(blank=True, null=True)),
                ('concurrency_key', models.CharField(blank=True, max_length=255, null=True)),
                ('flow_key', models.CharField(blank=True, max_length=255, null=True)),
                ('limits', models.JSONField(blank=True, null=True)),
                ('pending_key', models.CharField(blank=True, max_length=255, null=True)),
                ('has_dependents', models.BooleanField(db_default=False)),
                ('run_if', models.CharField(blank=True, choices=[('succeeded', 'every upstream step succeeded'), ('finished', 'every upstream step finished, whatever its outcome'), ('on_success', 'the workflow succeeded'), ('on_failure', 'a step of the workflow failed or was cancelled'), ('on_complete', 'the workflow finished')], max_length=16, null=True)),
                ('step_name', models.CharField(blank=True, max_length=200, null=True)),
                ('upstream', models.CharField(blank=True, choices=[('chain', "its one upstream step's return value (chain)"), ('chord', "the list of its upstream steps' return values, in order (chord)")], max_length=8, null=True)),
                ('workflow', models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='steps', to='leasequeue.workflowrun')),
                ('expires_at', models.DateTimeField(blank=True, null=True)),
                ('snoozes', models.PositiveIntegerField(db_default=0)),
                ('unique_until', models.DateTimeField(blank=True, null=True)),
                ('meta', models.JSONField(blank=True, db_default=models.Value({}, models.JSONField()))),
            ],
            options={
                'verbose_name': 'job',
                'verbose_name_plural': 'jobs',
                'indexes': [models.Index(condition=models.Q(('status', 'running')), fields=['queue_name'], name='leasequeue_job_running'), models.Index(condition=models.Q(('status', 'succeeded'), _negated=True), fields=['status', 'queue_name', 'id'], name='leasequeue_job_status_queue'), models.Index(fields=['task_path', 'id'], name='leasequeue_job_task'), models.Index(condition=models.Q(('finished_at__isnull', False)), fields=['status', 'finished_at'], name='leasequeue_job_finished'), models.Index(models.F('flow_key'), models.OrderBy(models.F('priority'), descending=True), models.F('run_after'), models.F('id'), condition=models.Q(('flow_key__isnull', False), ('status__in', ['queued', 'retrying'])), name='leasequeue_job_flow_order'), models.Index(condition=models.Q(('concurrency_key__isnull', False), ('status', 'running')), fields=['concurrency_key'], name='leasequeue_job_concurrency'), models.Index(condition=models.Q(('pending_key__isnull', False), ('status__in', ['queued', 'retrying', 'running'])), fields=['pending_key'], name='leasequeue_job_pending'), models.Index(condition=models.Q(('status__in', ['queued', 'retrying'])), fields=['queue_name', 'run_after'], name='leasequeue_job_queue_due'), models.Index(condition=models.Q(('workflow__isnull', False)), fields=['workflow', 'id'], name='leasequeue_job_workflow'), models.Index(models.F('queue_name'), models.OrderBy(models.F('priority'), descending=True), models.F('run_after'), models.F('id'), condition=models.Q(('flow_key__isnull', True), ('status__in', ['queued', 'retrying'])), name='leasequeue_job_queue_claim'), models.Index(condition=models.Q(('expires_at__isnull', False), ('status__in', ['queued', 'retrying'])), fields=['expires_at'], name='leasequeue_job_expiry'), models.Index(models.OrderBy(models.F('priority'), descending=True), models.F('run_after'), models.F('id'), condition=models.Q(('expires_at__isnull', True), ('flow_key__isnull', True), ('status__in', ['queued', 'retrying'])), name='leasequeue_job_claim_plain'), models.Index(models.OrderBy(models.F('priority'), descending=True), models.F('expires_at'), condition=models.Q(('expires_at__isnull', False), ('flow_key__isnull', True), ('status__in', ['queued', 'retrying'])), name='leasequeue_job_claim_expiring'), models.Index(condition=models.Q(('unique_until__isnull', False)), fields=['task_path', 'unique_key', 'unique_until'], name='leasequeue_job_unique_period')],
                'constraints': [models.CheckConstraint(condition=models.Q(('priority__gte', -100), ('priority__lte', 100)), name='leasequeue_job_priority_range'), models.CheckConstraint(condition=models.Q(('status__in', ['waiting', 'queued', 'running', 'retrying', 'succeeded', 'failed', 'cancelled'])), name='leasequeue_job_status_valid'), models.UniqueConstraint(condition=models.Q(('status__in', ['queued', 'retrying', 'running']), ('unique_key__isnull', False)), fields=('task_path', 'unique_key'), name='leasequeue_job_unique_key', violation_error_message='An unfinished job of this task already holds this unique key.')],
            },
        ),
        migrations.CreateModel(
            name='StepDependency',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('position', models.PositiveIntegerField()),
                ('outcome', models.CharField(blank=True, max_length=16, null=True)),
                ('child', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='dependencies_as_child', to='leasequeue.job')),
                ('parent', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='dependencies_as_parent', to='leasequeue.job')),
            ],
            options={
                'verbose_name': 'step dependency',
                'verbose_name_plural': 'step dependencies',
                'db_table': 'leasequeue_dependency',
                'indexes': [models.Index(fields=['parent'], name='leasequeue_dependency_parent'), models.Index(condition=models.Q(('outcome__isnull', True)), fields=['child'], name='leasequeue_dep_unsettled'), models.Index(fields=['child', 'position'], name='leasequeue_dependency_child'), models.Index(condition=models.Q(('outcome__in', ['failed', 'cancelled'])), fields=['child'], name='leasequeue_dep_unsuccessful')],
            },
        ),
        migrations.CreateModel(
            name='RateBucket',
            fields=[
                ('key', models.CharField(max_length=255, primary_key=True, serialize=False)),
                ('tat', models.DateTimeField()),
            ],
            options={
                'db_table': 'leasequeue_rate_bucket',
                'verbose_name': 'rate bucket',
                'verbose_name_plural': 'rate buckets',
            },
        ),
        migrations.CreateModel(
            name='Worker',
            fields=[
                ('id', models.CharField(max_length=100, primary_key=True, serialize=False)),
                ('host', models.CharField(max_length=255)),
                ('pid', models.PositiveIntegerField()),
                ('queues', models.JSONField(blank=True, null=True)),
                ('concurrency', models.PositiveIntegerField()),
                ('lease_seconds', models.FloatField()),
                ('started_at', models.DateTimeField()),
                ('heartbeat_at', models.DateTimeField()),
                ('jobs_running', models.PositiveIntegerField(db_default=0)),
                ('jobs_done', models.PositiveBigIntegerField(db_default=0)),
                ('stopped_at', models.DateTimeField(blank=True, null=True)),
                ('exit', models.CharField(blank=True, db_default='', max_length=100)),
            ],
            options={
                'verbose_name': 'worker',
                'verbose_name_plural': 'workers',
                'db_table': 'leasequeue_worker',
                'ordering': ['-started_at'],
            },
        ),
        migrations.CreateModel(
            name='Schedule',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('task_path', models.CharField(max_length=255, unique=True)),
                ('backend', models.CharField(max_length=100)),
                ('cron', models.CharField(blank=True, max_length=255, null=True)),
                ('cron_timezone', models.CharField(blank=True, max_length=100, null=True)),
                ('every', models.DurationField(blank=True, null=True)),
                ('overlap', models.CharField(choices=[('skip', 'skip while the previous run is unfinished'), ('allow', 'always enqueue')], db_default='skip', max_length=8)),
                ('catch_up', models.PositiveIntegerField(db_default=1)),
                ('paused', models.BooleanField(db_default=False)),
                ('retired', models.BooleanField(db_default=False)),
                ('covered_until', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('next_run_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('version', models.PositiveIntegerField(db_default=0)),
                ('last_job_id', models.UUIDField(blank=True, null=True)),
                ('last_run_at', models.DateTimeField(blank=True, null=True)),
                ('skipped_count', models.PositiveBigIntegerField(db_default=0)),
                ('missed_count', models.PositiveBigIntegerField(db_default=0)),
                ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
            ],
            options={
                'verbose_name': 'schedule',
                'verbose_name_plural': 'schedules',
                'ordering': ['task_path'],
                'constraints': [models.CheckConstraint(condition=models.Q(('cron__isnull', False), ('every__isnull', False), _connector='OR'), name='leasequeue_schedule_has_timing')],
            },
        ),
        migrations.CreateModel(
            name='PausedQueue',
            fields=[
                ('queue_name', models.CharField(max_length=100, primary_key=True, serialize=False)),
                ('reason', models.TextField(blank=True, db_default='')),
                ('paused_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
            ],
            options={
                'verbose_name': 'paused queue',
                'verbose_name_plural': 'paused queues',
                'db_table': 'leasequeue_paused_queue',
                'default_permissions': (),
            },
        ),
        migrations.RunSQL(FROZEN_SQL, REVERSE_SQL),
    ]
