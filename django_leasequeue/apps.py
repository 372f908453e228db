from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_migrate


class LeaseQueueConfig(AppConfig):
    """The app: its job table, admin, templates and commands. Its backend checks run through each
    LeaseQueueBackend's ``check()``, as Django's task checks call it; the progress bar's static
    file check is registered here."""

    name = "django_leasequeue"
    label = "leasequeue"
    verbose_name = "Lease queue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_leasequeue.checks import check_progress_script
        from django_leasequeue.control.permission import ensure_pause_permission

        checks.register(check_progress_script, checks.Tags.staticfiles)
        post_migrate.connect(ensure_pause_permission, sender=self)
