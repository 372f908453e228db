"""The test project's own app: its models (``tests/support/models.py``), their migrations and
its template. Its label stays ``tests``, the app's name before it moved here, so that its
migrations and its tables (``tests_receipt``, ...) keep their names."""

from django.apps import AppConfig


class TestsConfig(AppConfig):
    name = "tests.support"
    label = "tests"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tests.support import processes, signal_log

        signal_log.connect_from_environment()
        processes.die_with_supervisor()
