"""The demo's workflow: import the data the matcher uses from three sources at once, merge
them, then report, each step a job.

``fetch_source`` runs three times side by side (a group), reporting its progress as it goes;
``merge_sources`` is the chord's callback: it runs once all three succeeded and receives their
return values, in order, as its first argument; ``report_import`` comes last and receives the
merge's return value (a chain).
"""

import asyncio

from django.conf import settings

from django_leasequeue import JobContext, WorkflowHandle, chain, chord, group, step, task

# Each source and how many pages it has.
SOURCES = {"profiles": 5, "projects": 4, "reviews": 6}
NAME = "Nightly import"


def page_seconds() -> float:
    return float(getattr(settings, "IMPORT_PAGE_SECONDS", 0.4))


@task(takes_context=True, max_attempts=3, backoff_seconds=1)
async def fetch_source(context: JobContext, source: str, pages: int) -> dict:
    for page in range(1, pages + 1):
        await asyncio.sleep(page_seconds())  # the slow call to the source
        await context.aprogress(page, pages, f"{source}: page {page} of {pages}")
    return {"source": source, "records": pages * 25}


@task(takes_context=True)
async def merge_sources(context: JobContext, fetched: list[dict]) -> dict:
    await context.aprogress(0, 1, "merging")
    await asyncio.sleep(page_seconds())
    return {
        "sources": [part["source"] for part in fetched],
        "records": sum(part["records"] for part in fetched),
    }


@task
def report_import(merged: dict) -> str:
    return f"Imported {merged['records']} records from {', '.join(merged['sources'])}."


def start_import() -> WorkflowHandle:
    """Enqueue the workflow (its three fetches are due at once)."""
    workflow = chain(
        chord(
            group(*(step(fetch_source, name, pages) for name, pages in SOURCES.items())),
            step(merge_sources),
        ),
        step(report_import),
    )
    workflow.name = NAME
    return workflow.enqueue()
