-- leasequeue_index_probe: one probe of the status_queue index for the estimates of big counts
-- (leasequeue_estimate_entries): the first `entries` entries of one (status, queue) pair with
-- ids at positions in [from_at, before_at), or the last ones when backward. Returns how many it read (n),
-- their ids in index order, the first and last of them as positions, and, when due_only, how
-- many of them are due (run_after passed: read from their rows by primary key, the one heap
-- read; the counts of the queue summary read the index alone).
--
-- A position is an id's place in the id order as a number: its first 64 bits (uuid7: 48 bits
-- of the enqueue millisecond, the version, 12 random bits) plus its last 62 random bits as a
-- fraction, so that ids made in one millisecond still lie apart (a millisecond spans 65,536
-- whole positions).
--
-- Each walk is an ordered index walk with a LIMIT: it reads at most `entries` entries, never a
-- bitmap of the pair. The plans are cached per connection (generic), with sequential scans
-- off, as the other functions' are. The range of ids is written as row comparisons of
-- (status, queue_name, id), which only the status_queue index can take as its bounds: with
-- `id >= from_id AND id < before_id`, a generic plan made while the table was small walked
-- the primary key over the range instead, reading every row of it (other statuses' and
-- queues' too) from the table, and kept doing so once the backlog had grown.

CREATE OR REPLACE FUNCTION leasequeue_index_probe(pair_status text, pair_queue text,
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
