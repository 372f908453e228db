from importlib import import_module

from django.db import migrations

# leasequeue_release_children locks a finished batch's children before it probes them. That
# lock was written as a join (children IN (their dependency rows)), and once PL/pgSQL cached a
# generic plan for it, the planner, which expects some 300 dependency rows per batch and 150
# children, merged them with an ordered scan of the job table's primary key: late in a
# 10,000-member chord each batch read about 9,800 job rows to lock the callback (5.6 ms), and a
# chord's fan-in cost per step grew with its size (427 µs a step in one group of 10,000 against
# 311 in groups of 10; the drain at 0.49 of plain jobs). The children's ids are now gathered
# first and locked by key. The rest of the function is 0016's.
LOCK_AS_A_JOIN = """    PERFORM 1 FROM leasequeue_job
    WHERE id IN (SELECT child_id FROM leasequeue_dependency WHERE parent_id = ANY(parent_ids))
    ORDER BY id FOR UPDATE;"""
LOCK_BY_KEY = """    -- By key: written as a join, its generic plan (a PL/pgSQL plan is cached per session)
    -- merged the children with an ordered scan of the whole job table.
    PERFORM 1 FROM leasequeue_job
    WHERE id = ANY(ARRAY(SELECT DISTINCT child_id FROM leasequeue_dependency
                         WHERE parent_id = ANY(parent_ids)))
    ORDER BY id FOR UPDATE;"""

_0016 = import_module("django_leasequeue.migrations.0016_steps_completed_per_statement")
BACKWARD = _0016.RELEASE_CHILDREN.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
RELEASE_CHILDREN = BACKWARD.replace(LOCK_AS_A_JOIN, LOCK_BY_KEY)


class Migration(migrations.Migration):
    dependencies = [
        ("leasequeue", "0018_complete_many_plan_cached"),
    ]

    operations = [migrations.RunSQL(RELEASE_CHILDREN, BACKWARD)]
