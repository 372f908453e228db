"""A progress line that redraws itself in place in a terminal (``prunejobs``)."""

import time

from django.core.management.base import OutputWrapper

from django_leasequeue.management import pruning


class ProgressLine:
    """Redraws one terminal line (at most 10 times a second, and the last one always)."""

    INTERVAL_SECONDS = 0.1

    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout
        self.drawn_at = 0.0
        self.last: pruning.Progress | None = None

    def __call__(self, progress: pruning.Progress) -> None:
        self.last = progress
        now = time.monotonic()
        if now - self.drawn_at >= self.INTERVAL_SECONDS:
            self.drawn_at = now
            self._draw(progress)

    def _draw(self, progress: pruning.Progress) -> None:
        self.stdout.write("\r\x1b[K" + progress.line(), ending="")
        self.stdout.flush()

    def end(self) -> None:
        if self.last is not None:
            self._draw(self.last)
            self.stdout.write("")
