"""Three five-minute schedules with catch_up 0, 1 and 3 (the downtime test)."""
