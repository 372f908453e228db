"""The queues' recent history, for the admin's dashboard: jobs finished, backlog, pickup latency
and run time per queue, over an hour, a day or a week.

The workers' recover sweep rolls the job table up into ``leasequeue_queue_history`` once a
minute has ended (``runtime/history_rollup.py``): one row per queue and minute, merged into
15-minute and hourly rows once those have ended, kept a week and a day whatever the jobs'
retention. The dashboard reads those rows, and the minutes not rolled up yet (the newest) from
the job table itself (``series.py``). Latencies are histograms (``buckets.py``), which merge
exactly across minutes and queues' rows, where percentiles would not.
"""
