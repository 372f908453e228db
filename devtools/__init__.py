"""Developer tooling behind ``dev.py``: standard library only, so it runs before any install."""
