"""The test project, declaring the queues the docs' snippets use too ("emails")."""

from tests.support.settings import *  # noqa: F403
from tests.support.settings import TASKS

TASKS = {
    **TASKS,
    "default": {**TASKS["default"], "QUEUES": [*TASKS["default"]["QUEUES"], "emails"]},
}
