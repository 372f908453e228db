from django.apps import AppConfig


class TestsConfig(AppConfig):
    name = "tests"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tests import processes, signal_log

        signal_log.connect_from_environment()
        processes.die_with_supervisor()
