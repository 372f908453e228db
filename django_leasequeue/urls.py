"""HTTP routes of the app, e.g. ``path("leasequeue/", include("django_leasequeue.urls"))``."""

from django.urls import path

from django_leasequeue.metrics import views as metrics_views
from django_leasequeue.progress import views

app_name = "leasequeue"

urlpatterns = [
    path("jobs/<uuid:job_id>/status/", views.job_status, name="job-status"),
    path("workflows/<uuid:workflow_id>/status/", views.workflow_status, name="workflow-status"),
    path("metrics/", metrics_views.metrics, name="metrics"),
]
