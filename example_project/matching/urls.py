from django.urls import path

from example_project.matching import views

app_name = "matching"

urlpatterns = [
    path("", views.home, name="home"),
    path("results.json", views.results, name="results"),
]
