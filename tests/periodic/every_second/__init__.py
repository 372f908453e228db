"""One schedule ticking every second (the exactly-once, kill -9 and pause tests)."""
