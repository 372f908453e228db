from django.contrib import admin

from example_project.matching.models import ImportRun, MatchRequest, Project


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "summary", "fails_first_attempt"]


@admin.register(MatchRequest)
class MatchRequestAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "job_id", "requested_at"]
    list_select_related = ["user", "project"]


@admin.register(ImportRun)
class ImportRunAdmin(admin.ModelAdmin):
    list_display = ["user", "workflow_id", "started_at"]
    list_select_related = ["user"]
