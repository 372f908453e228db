"""``{% leasequeue_progress job %}``: a live, accessible progress bar for one job or workflow
(``django_leasequeue.progress.widget`` builds it)."""

from django import template

from django_leasequeue.progress.widget import TEMPLATE, progress_bar_context

register = template.Library()
register.inclusion_tag(TEMPLATE, name="leasequeue_progress")(progress_bar_context)
