from django.apps import AppConfig


class MatchingConfig(AppConfig):
    name = "example_project.matching"
    label = "matching"
    verbose_name = "Matching (demo)"
