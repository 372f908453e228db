"""The commands ``dev.py`` runs stop with it, cleanly.

Each runs in a process group of its own, and a SIGINT or SIGTERM that dev.py gets is passed on
to that group once: pytest then ends its run as on Ctrl-C (its workers and their tests tear
down: the workers the tests started stop, the test databases are dropped), and dev.py waits for
it, then stops. Without this, a ``timeout`` or a CI cancel that signals dev.py alone would leave
pytest, and the workers its tests started, running on.
"""

import contextlib
import os
import signal
import subprocess

_running: set[subprocess.Popen] = set()
_interrupted_by: int | None = None


def run(command: list, **popen_kwargs) -> int:
    """Run ``command`` to its end; its exit status."""
    if _interrupted_by is not None:
        return 128 + _interrupted_by
    process = subprocess.Popen(command, process_group=0, **popen_kwargs)
    _running.add(process)
    try:
        return process.wait()
    finally:
        _running.discard(process)


def pass_on_interrupts() -> None:
    signal.signal(signal.SIGINT, _pass_on)
    signal.signal(signal.SIGTERM, _pass_on)


def interrupted_by() -> int | None:
    """The signal that interrupted dev.py, if one did."""
    return _interrupted_by


def _pass_on(signum: int, frame: object) -> None:
    global _interrupted_by
    if _interrupted_by is not None:
        return  # once: a second signal would cut the first one's teardown short
    _interrupted_by = signum
    print(f"\n{signal.Signals(signum).name}: stopping the running command.", flush=True)
    for process in list(_running):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signum)
