"""The test settings, except that they fail to load inside a worker process: a settings module
that imports something only the supervisor's environment has (here: nothing has it), the way
an import error in a module the settings pull in shows up in spawned children only."""

import multiprocessing

from tests.support.settings import *  # noqa: F403

if multiprocessing.parent_process() is not None:
    import tests.no_such_module  # noqa: F401
