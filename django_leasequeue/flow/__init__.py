"""Flow control: global concurrency caps, rate limits and backpressure, shared by every worker.

``limits`` parses what tasks and settings declare and works out which limits a job is held to;
``admission`` decides which candidates a claim may start; ``backpressure`` refuses enqueues past
``max_pending``; ``usage`` reads what each limit is using now (for the admin).
"""
