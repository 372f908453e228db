"""How the management commands write a duration for a person at a terminal."""


def duration(seconds: float) -> str:
    """Whole seconds in the two largest units that matter: "12 s", "3 min 5 s", "2 h 10 min".

    (The admin has its own, translated and down to milliseconds: ``admin.display.duration``.)
    """
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"
