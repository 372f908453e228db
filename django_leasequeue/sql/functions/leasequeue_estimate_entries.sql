-- leasequeue_estimate_entries: how many entries one (status, queue) pair holds in the
-- status_queue index (when due_only, how many of them are due), estimated from a bounded
-- number of index probes (leasequeue_index_probe), for counts too big to count: the queue
-- summary (queue_summary in sql/reads.sql) and the backlog of the dashboard and the per-minute
-- rollup (due_backlog in sql/history.sql).
--
-- The pair's stretch of positions, from its first id to its last, is cut into `slices` equal
-- slices. Each slice is read by a chain of steps from its start, at most `chain` steps plus
-- those the slices before it left unused (so that a slice with many bursts borrows from empty
-- ones, and the whole estimate takes at most slices x chain steps):
--   * a forward probe reads the next `per_probe` entries; fewer: the rest of the slice holds
--     just those, counted;
--   * entries all within one millisecond are a burst (a bulk enqueue spreads its ids over its
--     millisecond): the step's block is the rest of that millisecond, and the chain goes on
--     from the next one; entries over several milliseconds are steady traffic: the block is
--     the rest of the slice, and the chain ends;
--   * a backward probe reads the block's last `per_probe` entries: with the forward ones they
--     make the block's count when they meet, else their density (entries per position, from
--     both ends) estimates the entries between them;
--   * a slice with entries left when its chain runs out: the chain's blocks and the time
--     between them up to the next entry (one probe) give a mean density, carried from that
--     entry to the slice's last (one probe).
-- Then the steps no chain took, shared out evenly, read each estimated block at more places
-- between its two probes (forward probes from even cuts), for a density from more entries.
-- A density is never carried over positions that hold no entries at either end: the time
-- between bursts is no longer counted as jobs. A burst inside steady traffic of one slice is
-- read at the traffic's density (no probe starts next to it): that error stays, up to the
-- burst's size.
--
-- Bound: 2 + slices x (chain x 2 x per_probe + 2) index entries; with due_only, the rows of
-- the chains' forward probes' entries (at most slices x chain x per_probe) are read for their
-- run_after, which gives each block its share of due jobs.

CREATE OR REPLACE FUNCTION leasequeue_estimate_entries(pair_status text, pair_queue text,
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
