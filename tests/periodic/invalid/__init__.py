"""Schedules that cannot tick: the system checks must refuse them (and refuse to start workers)."""
