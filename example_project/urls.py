from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("", include("example_project.matching.urls")),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]

try:  # the JSON status view behind the progress bars' polling fallback
    import django_leasequeue.urls  # noqa: F401
except ImportError:
    pass
else:
    urlpatterns.append(path("leasequeue/", include("django_leasequeue.urls")))
