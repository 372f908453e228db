"""The demo's pages: pick projects, watch their jobs, read the scores."""

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_GET

from django_leasequeue.models import Job
from example_project.matching import limits
from example_project.matching.forms import MatchForm
from example_project.matching.models import MatchRequest
from example_project.matching.submit import submit

# How many of the user's latest jobs the page shows: one submission's worth.
SHOWN_JOBS = 5


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
        return reverse("admin:django_leasequeue_job_changelist")
    except NoReverseMatch:
        return reverse("admin:index")


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
    context = {
        "form": form,
        "matches": recent_matches(request.user),
        "max_selection": limits.max_selection(),
        "max_unfinished": limits.max_unfinished_jobs(),
        "admin_jobs_url": admin_jobs_url(),
    }
    return render(request, "matching/home.html", context)


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
