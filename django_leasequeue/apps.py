from django.apps import AppConfig


class LeaseQueueConfig(AppConfig):
    """The app: its job table, admin, templates and commands. Its system checks run through each
    LeaseQueueBackend's ``check()``, as Django's task checks call it."""

    name = "django_leasequeue"
    label = "leasequeue"
    verbose_name = "Lease queue"
    default_auto_field = "django.db.models.BigAutoField"
