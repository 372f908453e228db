"""The docs name every module, option and system check, and nothing that is gone.

``docs/architecture.md`` (*Packages and modules*) is the one list of the package's modules: a row
per Python module (but migrations and empty ``__init__.py`` files) and per SQL file, its path
relative to ``django_leasequeue/`` in the first cell. ``docs/configuration.md`` has a row per
``BackendConfig`` option and per system check id. The README links to both instead of copying.
"""

import re
from dataclasses import fields
from pathlib import Path

import django_leasequeue
from django_leasequeue.conf import BackendConfig

PACKAGE = Path(django_leasequeue.__file__).parent
ROOT = PACKAGE.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
CONFIGURATION = ROOT / "docs" / "configuration.md"

_FIRST_CELL = re.compile(r"^\| `(?P<name>[^`]+)` \|", re.M)
_CHECK_ID = re.compile(r"\bleasequeue\.(?P<id>[EW]\d{3})\b")


def section(markdown: str, heading: str) -> str:
    """The text under ``## heading``, up to the next heading of that level."""
    markdown = "\n" + markdown
    start = markdown.index(f"\n## {heading}\n")
    end = markdown.find("\n## ", start + 1)
    return markdown[start : end if end != -1 else len(markdown)]


def first_cells(markdown: str) -> set[str]:
    """What the table rows of ``markdown`` name in backticks in their first cell."""
    return {match["name"] for match in _FIRST_CELL.finditer(markdown)}


def package_modules(package: Path) -> set[str]:
    """Every Python module (migrations and empty ``__init__.py`` files aside) and SQL file of
    the package, as a path relative to it."""
    found = set()
    for path in [*package.rglob("*.py"), *package.rglob("*.sql")]:
        relative = path.relative_to(package)
        if relative.parts[0] == "migrations" or "__pycache__" in relative.parts:
            continue
        if path.name == "__init__.py" and not path.read_text().strip():
            continue
        found.add(relative.as_posix())
    return found


def check_ids(package: Path) -> set[str]:
    """The system check ids (``leasequeue.E001``...) the package's code reports."""
    return {
        match["id"]
        for path in package.rglob("*.py")
        if "migrations" not in path.parts
        for match in _CHECK_ID.finditer(path.read_text())
    }


def test_the_module_map_names_every_module_of_the_package_and_no_other():
    documented = first_cells(section(ARCHITECTURE.read_text(), "Packages and modules"))
    modules = package_modules(PACKAGE)
    assert len(modules) > 50  # the walk found the package
    assert sorted(modules - documented) == [], "missing from docs/architecture.md"
    assert sorted(documented - modules) == [], "in docs/architecture.md but not in the package"


def test_the_map_check_sees_a_missing_and_a_stale_row(tmp_path):
    (tmp_path / "kept.py").write_text("X = 1\n")
    (tmp_path / "new.py").write_text("X = 1\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "__init__.py").write_text("")
    (tmp_path / "queries.sql").write_text("-- name: a\n-- a\nSELECT 1;\n")
    markdown = "## Packages and modules\n\n| module | does |\n|---|---|\n| `kept.py` | x |\n"
    markdown += "| `queries.sql` | y |\n| `gone.py` | z |\n\n## Next\n\n| `other.py` | w |\n"
    documented = first_cells(section(markdown, "Packages and modules"))
    modules = package_modules(tmp_path)
    assert modules - documented == {"new.py"}
    assert documented - modules == {"gone.py"}


def test_the_configuration_page_documents_every_option_and_no_other():
    documented = first_cells(section(CONFIGURATION.read_text(), "Options"))
    options = {field.name for field in fields(BackendConfig)}
    assert sorted(options - documented) == [], "options missing from docs/configuration.md"
    assert sorted(documented - options) == [], "documented options that do not exist"


def test_the_configuration_page_documents_every_system_check_and_no_other():
    table = section(CONFIGURATION.read_text(), "System checks")
    documented = {_CHECK_ID.match(name)["id"] for name in first_cells(table)}
    reported = check_ids(PACKAGE)
    assert {"E001", "E006", "E020", "E021", "W001", "W020", "W040"} <= reported
    assert sorted(reported - documented) == [], "check ids missing from docs/configuration.md"
    assert sorted(documented - reported) == [], "documented check ids the package never reports"


def test_the_readme_links_to_the_lists_instead_of_copying_them():
    readme = (ROOT / "README.md").read_text()
    options = {field.name for field in fields(BackendConfig)}
    assert not first_cells(readme) & options, "the README copies the options table"
    # Naming the one check a sentence is about is fine; a list of them is a copy.
    named_checks = {match["id"] for match in _CHECK_ID.finditer(readme)}
    assert len(named_checks) <= 1, f"the README copies the system checks: {named_checks}"
    assert not re.search(r"^\s+\w+\.py {2,}\S", readme, re.M), "the README copies the module map"
    assert "docs/architecture.md" in section(readme, "Layout")
    assert "(docs/configuration.md)" in readme
