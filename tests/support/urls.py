from django.contrib import admin
from django.urls import include, path

from tests.support.views import progress_page

urlpatterns = [
    path("admin/", admin.site.urls),
    path("leasequeue/", include("django_leasequeue.urls")),
    path("progress/<uuid:job_id>/", progress_page),
]
