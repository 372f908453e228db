"""The test project, declaring the queues the docs' snippets use too ("emails")."""

from tests.settings import *  # noqa: F403
from tests.settings import TASKS

TASKS = {
    **TASKS,
    "default": {**TASKS["default"], "QUEUES": [*TASKS["default"]["QUEUES"], "emails"]},
}
