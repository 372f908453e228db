"""The processes a test starts die with it, even when the test process is killed outright.

An interrupted run (SIGKILL, a CI timeout) gets no chance to stop the ``runworkers`` it started.
Left running, they would hold the test database (the next run could not drop it) and take the
next run's jobs. So each process a test starts asks Linux for a parent-death signal
(``PR_SET_PDEATHSIG``), sent as soon as the process that started it ends:

- ``popen_options()`` for ``subprocess.Popen``: SIGTERM, set between fork and exec. A
  ``runworkers`` then stops its worker processes as it does on any SIGTERM (also those of a
  project that is not the test project, as in test_docs_project);
- the worker processes of a test project's ``runworkers``: SIGKILL when their supervisor ends,
  set when they are forked (or, spawned, when their Django is ready: ``tests/support/apps.py`` calls
  ``die_with_supervisor``), since their supervisor starts them and the product knows nothing
  of this.

Elsewhere than on Linux, nothing is set: there, an interrupted run may leave processes behind,
and the next run stops them (``tests/support/leftovers.py``).
"""

import ctypes
import multiprocessing
import os
import signal
import sys
from functools import partial

# In the environment of the processes the tests start (and of theirs): ask for the signal.
ENV_VAR = "LEASEQUEUE_TEST_DIE_WITH_PARENT"
_PR_SET_PDEATHSIG = 1
# Loaded here, not between fork and exec, where only async-signal-safe work is sound.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def die_with_parent(parent_pid: int, signum: int) -> None:
    """Have ``signum`` sent to this process when its parent ends; at once if the parent,
    ``parent_pid``, ended already (the process was adopted before it could ask)."""
    if _LIBC is None:
        return
    if _LIBC.prctl(_PR_SET_PDEATHSIG, signum) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), signum)


def popen_options(env: dict[str, str]) -> dict:
    """``subprocess.Popen`` keywords for a process a test starts: it dies with the test process
    (and so do the processes it starts, when they are Django processes of the test project),
    in a session of its own so that the test can signal its whole process group."""
    return {
        "env": {**env, ENV_VAR: "1"},
        "preexec_fn": partial(die_with_parent, os.getpid(), signal.SIGTERM),
        "start_new_session": True,
    }


def die_with_supervisor() -> None:
    """In a Django process a test started: its worker processes, should it be a ``runworkers``,
    die with it. A spawned worker asks when its own Django is ready; forked ones never set
    Django up again, so they ask as they are forked."""
    if not os.environ.get(ENV_VAR):
        return
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid is not None:
        die_with_parent(parent.pid, signal.SIGKILL)
    else:
        os.register_at_fork(after_in_child=partial(die_with_parent, os.getpid(), signal.SIGKILL))
