"""A page that shows one job's progress bar, as a project using the template tag would."""

from uuid import UUID

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def progress_page(request: HttpRequest, job_id: UUID) -> HttpResponse:
    return render(request, "progress_page.html", {"job_id": job_id})
