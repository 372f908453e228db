from django.apps import AppConfig


class LeaseQueueConfig(AppConfig):
    name = "django_leasequeue"
    label = "leasequeue"
    verbose_name = "Lease queue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_leasequeue import checks  # noqa: F401  (registers the system checks)
