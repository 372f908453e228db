"""100 declared schedules, installed only when ``throughput.py --schedule-cost`` asks
(``LEASEQUEUE_BENCH_SCHEDULES``): what declaring them costs a worker's claims."""
