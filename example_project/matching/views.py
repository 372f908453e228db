"""The demo's pages: pick projects, watch their jobs, read the scores; start the import
workflow and watch it move."""

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_GET, require_POST

from django_leasequeue.models import Job, WorkflowRun
from example_project.matching import limits
from example_project.matching.forms import MatchForm
from example_project.matching.import_runs import start_for
from example_project.matching.imports import fetch_source
from example_project.matching.models import ImportRun, MatchRequest
from example_project.matching.submit import submit

# How many of the user's latest jobs the page shows: one submission's worth.
SHOWN_JOBS = 5
# How many of the user's latest imports the page lists.
SHOWN_IMPORTS = 5


def recent_matches(user) -> list[dict[str, Any]]:
    requests = list(MatchRequest.objects.filter(user=user).select_related("project")[:SHOWN_JOBS])
    jobs = Job.objects.in_bulk([r.job_id for r in requests])
    return [
        {"request": r, "project": r.project, "job": jobs[r.job_id]}
        for r in requests
        if r.job_id in jobs  # pruned jobs drop out of the list
    ]


def admin_jobs_url() -> str:
    """The admin's job list (lease state), or the admin index when jobs are not registered."""
    try:
        return reverse("admin:leasequeue_job_changelist")
    except NoReverseMatch:
        return reverse("admin:index")


def _home(request: HttpRequest, form: MatchForm, *, status: int = 200) -> HttpResponse:
    """The home page: the match form, the user's latest jobs and imports, and the limits."""
    context = {
        "form": form,
        "matches": recent_matches(request.user),
        "max_selection": limits.max_selection(),
        "max_unfinished": limits.max_unfinished_jobs(),
        "max_running_imports": limits.max_running_imports(),
        "admin_jobs_url": admin_jobs_url(),
        "imports": WorkflowRun.objects.filter(
            pk__in=[
                run.workflow_id
                for run in ImportRun.objects.filter(user=request.user)[:SHOWN_IMPORTS]
            ]
        ).order_by("-created_at"),
    }
    return render(request, "matching/home.html", context, status=status)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = MatchForm(request.POST)
        if form.is_valid():
            outcome = submit(request.user, form.cleaned_data["projects"])
            if outcome.refused_because:
                messages.error(request, outcome.refused_because)
            if outcome.created:
                messages.success(request, f"Started {outcome.created} match job(s).")
            if outcome.already_running and not outcome.refused_because:
                messages.info(
                    request,
                    f"{outcome.already_running} project(s) already had an unfinished job; "
                    "it is shown below instead of a duplicate.",
                )
            return redirect("matching:home")
    else:
        form = MatchForm()
    return _home(request, form)


@login_required
@require_GET
def results(request: HttpRequest) -> JsonResponse:
    """The user's latest jobs, for the page to fill in scores as they land."""
    return JsonResponse(
        {
            "jobs": [
                {
                    "id": str(match["job"].id),
                    "status": match["job"].status,
                    "attempt": match["job"].attempt,
                    "result": match["job"].result,
                    "error": (match["job"].errors[-1]["message"] if match["job"].errors else ""),
                }
                for match in recent_matches(request.user)
            ]
        }
    )


# The import workflow


@login_required
@require_POST
def start(request: HttpRequest) -> HttpResponse:
    """Enqueue an import and show it; past the user's cap on running imports, the home page
    with the reason, as 429 Too Many Requests."""
    started = start_for(request.user)
    if started.workflow_id is None:
        messages.error(request, started.refused_because)
        return _home(request, MatchForm(), status=429)
    return redirect("matching:import", workflow_id=started.workflow_id)


def _users_import(request: HttpRequest, workflow_id: UUID) -> WorkflowRun:
    if not ImportRun.objects.filter(user=request.user, workflow_id=workflow_id).exists():
        raise Http404("Not one of your imports.")
    try:
        return WorkflowRun.objects.get(pk=workflow_id)
    except WorkflowRun.DoesNotExist:
        raise Http404("This import was deleted.") from None


@login_required
@require_GET
def import_page(request: HttpRequest, workflow_id: UUID) -> HttpResponse:
    """One bar for the whole workflow, one per step, and the report once it is in."""
    workflow = _users_import(request, workflow_id)
    steps = Job.objects.filter(workflow=workflow).order_by("step_name")
    context = {
        "workflow": workflow,
        # Each step, and for a fetch the source it reads.
        "steps": [
            (job, job.args[0] if job.task_path == fetch_source.module_path else "") for job in steps
        ],
        "report": _report(workflow),
        "admin_url": _admin_workflow_url(request, workflow),
    }
    return render(request, "matching/import.html", context)


@login_required
@require_GET
def import_result(request: HttpRequest, workflow_id: UUID) -> JsonResponse:
    """The workflow's status and report, for the page to show once its bar has ended."""
    workflow = _users_import(request, workflow_id)
    return JsonResponse({"status": workflow.status, "report": _report(workflow)})


def _report(workflow: WorkflowRun) -> str:
    last = workflow.steps.filter(task_path__endswith=".report_import").first()
    return last.result if last is not None and isinstance(last.result, str) else ""


def _admin_workflow_url(request: HttpRequest, workflow: WorkflowRun) -> str:
    """The workflow's admin page (its graph), for staff who may see it."""
    user = request.user
    if not (user.is_staff and user.has_perm("leasequeue.view_workflowrun")):
        return ""
    return reverse("admin:leasequeue_workflowrun_change", args=[workflow.pk])
