"""``leasequeue.W040``: the progress bar's script must be findable by staticfiles."""

from django.core import checks


def _ids() -> set[str]:
    return {message.id for message in checks.run_checks(tags=[checks.Tags.staticfiles])}


def test_no_warning_with_djangos_default_finders():
    assert "leasequeue.W040" not in _ids()


def test_finders_that_cannot_find_the_script_are_warned_about(settings):
    settings.STATICFILES_FINDERS = ["django.contrib.staticfiles.finders.FileSystemFinder"]
    [warning] = [m for m in checks.run_checks(tags=["staticfiles"]) if m.id == "leasequeue.W040"]
    assert "leasequeue/progress.js" in warning.msg and "AppDirectoriesFinder" in warning.hint
