"""The README and the docs show a reader who installed the wheel only what the wheel ships.

- No code block imports from ``tests`` or names a module or file of ``tests/``: an example the
  reader needs is written out in the page (a whole module as ``# myapp/tasks.py``, run by
  ``tests/integration/test_docs_snippets.py``).
- The prose names a path under ``tests/`` only to cite the test that proves a claim: a test
  module (``tests/**/test_*.py``) or a folder of them, which exists. A helper, settings or task
  module of the test suite is never named: the reader would have to open it for something the
  page should say itself.
- Contributors' commands, which run in a checkout of the repository, may use the test project
  (``--settings tests.support.settings``): those code blocks stand in the sections of
  ``CONTRIBUTOR_SECTIONS``, and nowhere else.
"""

import re
from pathlib import Path

import pytest

from tests.support import docs_snippets

ROOT = docs_snippets.ROOT
DOCUMENTS = [
    str(path.relative_to(ROOT)) for path in [*sorted(ROOT.glob("docs/*.md")), ROOT / "README.md"]
]
# Sections whose code is for contributors, in a checkout: {document: {section title}}.
CONTRIBUTOR_SECTIONS = {
    # bench/admin_explain.py's database, migrated with the test project's settings (bench/ is
    # not in the wheel either).
    "docs/admin.md": {"Reproduce"},
}
# A path under tests/ (tests/a/b.py, tests/acceptance/) or a dotted module of it
# (tests.support.settings; not an app's own tests.py), not inside a longer path or address.
TESTS_REFERENCE = re.compile(r"(?<![\w/.-])tests(?:/[\w./-]*|\.(?!py\b)\w[\w.]*)")
TESTS_IMPORT = re.compile(r"^\s*(?:from|import)\s+tests\b", re.M)


def references_in_code(code: str) -> list[str]:
    return TESTS_IMPORT.findall(code) + TESTS_REFERENCE.findall(code)


def is_a_citation_of_tests(reference: str) -> bool:
    """An existing test module, or an existing folder that holds test modules."""
    path = ROOT / reference.rstrip(".")
    if not reference.startswith("tests/"):
        return False
    if path.is_file():
        return path.name.startswith("test_") and path.suffix == ".py"
    return path.is_dir() and any(path.rglob("test_*.py"))


@pytest.mark.parametrize("document", DOCUMENTS)
def test_no_code_block_uses_the_test_suite(document):
    found = [
        f"{document}:{block.line}: {reference}"
        for block in docs_snippets.blocks(document)
        if block.section not in CONTRIBUTOR_SECTIONS.get(document, set())
        for reference in references_in_code(block.code)
    ]
    assert found == []


@pytest.mark.parametrize("document", DOCUMENTS)
def test_the_prose_names_a_file_under_tests_only_to_cite_a_test(document):
    found = [
        f"{document}:{number}: {reference}"
        for number, line in docs_snippets.prose(document)
        for reference in TESTS_REFERENCE.findall(line)
        if not is_a_citation_of_tests(reference)
    ]
    assert found == []


def test_each_contributor_section_exists():
    for document, sections in CONTRIBUTOR_SECTIONS.items():
        assert sections <= {block.section for block in docs_snippets.blocks(document)}, document


def test_the_checks_tell_a_citation_from_a_pointer_at_the_suite():
    code = "from tests.support.tasks.workflows import fetch\nimport tests\n"
    assert references_in_code(code) == [
        "from tests",
        "import tests",
        "tests.support.tasks.workflows",
    ]
    assert references_in_code("# myapp/tests.py: your app's tests.py\n") == []
    assert is_a_citation_of_tests("tests/acceptance/test_hooks.py")
    assert is_a_citation_of_tests("tests/acceptance/")
    assert not is_a_citation_of_tests("tests/support/helpers.py")  # a helper
    assert not is_a_citation_of_tests("tests/support/")  # the helpers' folder
    assert not is_a_citation_of_tests("tests/acceptance/test_gone.py")  # no such file
    assert not is_a_citation_of_tests("tests.support.settings")
    assert Path(ROOT / "tests/support/helpers.py").is_file()
