from django.urls import path

from example_project.matching import views

app_name = "matching"

urlpatterns = [
    path("", views.home, name="home"),
    path("results.json", views.results, name="results"),
    path("imports/", views.start, name="start-import"),
    path("imports/<uuid:workflow_id>/", views.import_page, name="import"),
    path("imports/<uuid:workflow_id>/result.json", views.import_result, name="import-result"),
]
