"""A 3-second job on a 1-second schedule (the overlap test)."""
