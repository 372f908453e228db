# Big counts (the queue summary's, the backlog of the dashboard and of the per-minute rollup)
# are estimated by one function both statements call (issue 38): probes of the status_queue
# index in chains that follow bursts of jobs (bulk enqueues, one millisecond each) instead of
# carrying one burst's density over the idle time after it (4 bulk enqueues of 650 jobs read as
# 1,039,567 jobs). What they do and why: sql/functions/leasequeue_estimate_entries.sql.

from django.db import migrations

INDEX_PROBE = r"""
CREATE FUNCTION leasequeue_index_probe(pair_status text, pair_queue text,
                                                  from_at bigint, before_at bigint,
                                                  entries integer, backward boolean,
                                                  due_only boolean)
RETURNS TABLE (n integer, ids uuid[], first_at numeric, last_at numeric, due integer)
LANGUAGE plpgsql
STABLE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
    from_id uuid := (lpad(to_hex(from_at), 16, '0') || repeat('0', 16))::uuid;
    before_id uuid := (lpad(to_hex(before_at), 16, '0') || repeat('0', 16))::uuid;
BEGIN
    IF backward THEN
        ids := ARRAY(SELECT job.id FROM leasequeue_job AS job
                     WHERE job.status = pair_status AND job.queue_name = pair_queue
                       AND job.status <> 'succeeded'
                       AND (job.status, job.queue_name, job.id)
                           >= (pair_status, pair_queue, from_id)
                       AND (job.status, job.queue_name, job.id)
                           < (pair_status, pair_queue, before_id)
                     ORDER BY job.status DESC, job.queue_name DESC, job.id DESC
                     LIMIT entries);
        ids := ARRAY(SELECT id FROM unnest(ids) AS id ORDER BY id);
    ELSE
        ids := ARRAY(SELECT job.id FROM leasequeue_job AS job
                     WHERE job.status = pair_status AND job.queue_name = pair_queue
                       AND job.status <> 'succeeded'
                       AND (job.status, job.queue_name, job.id)
                           >= (pair_status, pair_queue, from_id)
                       AND (job.status, job.queue_name, job.id)
                           < (pair_status, pair_queue, before_id)
                     ORDER BY job.status, job.queue_name, job.id
                     LIMIT entries);
    END IF;
    n := cardinality(ids);
    SELECT min(at), max(at) INTO first_at, last_at
    FROM (SELECT ('x' || left(hex, 16))::bit(64)::bigint
                 + (('x' || right(hex, 16))::bit(64)::bigint & 4611686018427387903)::numeric
                   / 4611686018427387904 AS at
          FROM (SELECT replace(id::text, '-', '') AS hex
                FROM unnest(ARRAY[ids[1], ids[n]]) AS id) AS hexes) AS positions;
    due := n;
    IF due_only AND n > 0 THEN
        SELECT count(*) INTO due FROM leasequeue_job AS job
        WHERE job.id = ANY(ids) AND job.run_after <= now();
    END IF;
    RETURN NEXT;
END $$;
"""

ESTIMATE_ENTRIES = r"""
CREATE FUNCTION leasequeue_estimate_entries(pair_status text, pair_queue text,
                                                       slices integer, per_probe integer,
                                                       chain integer, due_only boolean)
RETURNS numeric
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    top CONSTANT bigint := 9223372036854775807;
    ms CONSTANT bigint := 65536;  -- whole positions per millisecond
    fwd record;
    back record;
    mid record;
    lo bigint;
    hi bigint;
    pos bigint;
    slice_end bigint;
    block_end bigint;
    block numeric;
    density numeric;
    steps integer;
    spare integer := 0;
    chain_from numeric;
    entries numeric;
    due numeric;
    -- The blocks estimated (not counted), for the second pass: the entries read, the gaps
    -- between them and the positions they span, the positions unread, where the unread part
    -- starts and ends (whole positions), and the share of due entries.
    known numeric[] := '{}';
    gaps numeric[] := '{}';
    span numeric[] := '{}';
    unread numeric[] := '{}';
    gap_from bigint[] := '{}';
    gap_to bigint[] := '{}';
    share numeric[] := '{}';
    extra integer;
    cut_from bigint;
    cut_to bigint;
    read_to numeric;
    counted numeric := 0;  -- counted, or carried over by a chain that ran out
    counted_due numeric := 0;
    total numeric := 0;
    total_due numeric := 0;
BEGIN
    SELECT * INTO fwd FROM leasequeue_index_probe(pair_status, pair_queue, 0, top, 1, false,
                                                  false);
    IF fwd.n = 0 THEN
        RETURN 0;
    END IF;
    SELECT * INTO back FROM leasequeue_index_probe(pair_status, pair_queue, 0, top, 1, true,
                                                   false);
    lo := floor(fwd.first_at);
    hi := floor(back.last_at);
    FOR part IN 0 .. slices - 1 LOOP
        pos := lo + ((hi - lo + 1)::numeric * part / slices)::bigint;
        slice_end := lo + ((hi - lo + 1)::numeric * (part + 1) / slices)::bigint;
        steps := 0;
        chain_from := NULL;
        entries := 0;
        due := 0;
        WHILE pos < slice_end AND steps < chain + spare LOOP
            steps := steps + 1;
            SELECT * INTO fwd FROM leasequeue_index_probe(pair_status, pair_queue, pos,
                                                          slice_end, per_probe, false,
                                                          due_only);
            IF fwd.n < per_probe THEN  -- the rest of the slice holds just these
                counted := counted + fwd.n;
                counted_due := counted_due + fwd.due;
                entries := entries + fwd.n;
                due := due + fwd.due;
                pos := slice_end;
                EXIT;
            END IF;
            chain_from := coalesce(chain_from, fwd.first_at);
            -- In one millisecond: a burst, whose block ends with its millisecond.
            block_end := CASE WHEN floor(fwd.first_at / ms) = floor(fwd.last_at / ms)
                              THEN least(slice_end, (floor(fwd.first_at / ms)::bigint + 1) * ms)
                              ELSE slice_end END;
            SELECT * INTO back FROM leasequeue_index_probe(pair_status, pair_queue,
                                                           floor(fwd.first_at)::bigint,
                                                           block_end, per_probe, true, false);
            IF back.ids[1] <= fwd.ids[fwd.n] THEN  -- the two probes meet: all counted
                block := fwd.n + (SELECT count(*) FROM unnest(back.ids) AS id
                                  WHERE id > fwd.ids[fwd.n]);
                counted := counted + block;
                counted_due := counted_due + block * fwd.due / fwd.n;
            ELSE
                known := known || (fwd.n + back.n)::numeric;
                gaps := gaps || (fwd.n + back.n - 2)::numeric;
                span := span || (fwd.last_at - fwd.first_at + back.last_at - back.first_at);
                unread := unread || (back.first_at - fwd.last_at);
                gap_from := gap_from || (floor(fwd.last_at)::bigint + 1);
                gap_to := gap_to || floor(back.first_at)::bigint;
                share := share || (fwd.due::numeric / fwd.n);
                block := fwd.n + back.n
                         + greatest((fwd.n + back.n - 2) * (back.first_at - fwd.last_at)
                                    / greatest(span[cardinality(span)], 1e-9) - 1, 0);
            END IF;
            entries := entries + block;
            due := due + block * fwd.due / fwd.n;
            pos := block_end;
        END LOOP;
        spare := chain + spare - steps;
        IF pos < slice_end THEN  -- the chain ran out
            SELECT * INTO fwd FROM leasequeue_index_probe(pair_status, pair_queue, pos,
                                                          slice_end, 1, false, false);
            IF fwd.n > 0 THEN
                SELECT * INTO back FROM leasequeue_index_probe(pair_status, pair_queue, pos,
                                                               slice_end, 1, true, false);
                density := entries / greatest(fwd.first_at - chain_from, 1e-9);
                block := 1 + density * (back.last_at - fwd.first_at);
                counted := counted + block;
                counted_due := counted_due + block * due / entries;
            END IF;
        END IF;
    END LOOP;
    -- The second pass: the steps left read the estimated blocks at more places between their
    -- two probes, cut evenly, shared out evenly.
    FOR b IN 1 .. cardinality(known) LOOP
        extra := least(spare / (cardinality(known) - b + 1), gap_to[b] - gap_from[b]);
        spare := spare - greatest(extra, 0);
        FOR cut IN 1 .. extra LOOP
            cut_from := gap_from[b] + (gap_to[b] - gap_from[b]) * (cut - 1) / extra;
            cut_to := gap_from[b] + (gap_to[b] - gap_from[b]) * cut / extra;
            SELECT * INTO mid FROM leasequeue_index_probe(pair_status, pair_queue, cut_from,
                                                          cut_to, per_probe, false, false);
            -- From a cut to the next entry is a gap like any other: n gaps in the stretch
            -- read (to its last entry, or to the cut's end when it holds fewer).
            read_to := CASE WHEN mid.n < per_probe THEN cut_to ELSE mid.last_at END;
            known[b] := known[b] + mid.n;
            gaps[b] := gaps[b] + mid.n;
            span[b] := span[b] + (read_to - cut_from);
            unread[b] := unread[b] - (read_to - cut_from);
        END LOOP;
        block := known[b] + greatest(gaps[b] / greatest(span[b], 1e-9) * unread[b] - 1, 0);
        total := total + block;
        total_due := total_due + block * share[b];
    END LOOP;
    RETURN CASE WHEN due_only THEN counted_due + total_due ELSE counted + total END;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("leasequeue", "0025_queue_history"),
    ]

    operations = [
        migrations.RunSQL(
            INDEX_PROBE,
            "DROP FUNCTION leasequeue_index_probe(text, text, bigint, bigint, integer, boolean,"
            " boolean);",
        ),
        migrations.RunSQL(
            ESTIMATE_ENTRIES,
            "DROP FUNCTION leasequeue_estimate_entries(text, text, integer, integer, integer,"
            " boolean);",
        ),
    ]
