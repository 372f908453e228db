"""Every Python snippet and template of the docs (``docs/*.md``) runs in the test project.

A page's Python blocks run in order in one module, as a reader pastes them into a ``tasks.py`` or
``manage.py shell``: each block with the ones before it, on the real PostgreSQL and Redis (the
value of a block's last expression is shown, as the shell would, so a lazy query runs too). Parts
that are settings (``# settings.py``, or nothing but ``UPPER_CASE = ...``) are checked instead:
every backend and engine they name imports, every ``INSTALLED_APPS`` entry imports, and each
``LeaseQueueBackend``'s ``OPTIONS`` parse. Template blocks render. A block marked
``<!-- docs-test: skip: why -->`` is reported as skipped with its reason; the shell commands run
in ``tests/acceptance/test_docs_commands.py``, and the README has its own test
(``tests/acceptance/test_docs_project.py``, a new project built from it).

A page's whole modules (``# myapp/tasks.py``: see ``tests/support/docs_snippets.py``) are
written into their package on a directory put first on ``sys.path``: a block that shows one
imports it, and the page's other blocks import from it, so the tests run the module the page
shows.

Only the reader's own objects are added (``GLUE``): a user, some ids, a report task.
"""

import ast
import sys
import types
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path
from typing import Any

import django
import pytest
from django.template import Context, Template
from django.test import override_settings
from django.utils.module_loading import import_string

from django_leasequeue.conf import BackendConfig
from django_leasequeue.task import declared_schedules
from tests.support import docs_snippets
from tests.support.settings import docs as settings_docs

DOCS = sorted(path.relative_to(docs_snippets.ROOT) for path in docs_snippets.ROOT.glob("docs/*.md"))
RUNNABLE = {"python", "django", "sh"}

# The reader's own objects that a page's snippets use, set up before its first block.
GLUE = {
    "docs/tasks.md": """
from types import SimpleNamespace

from django_leasequeue import task as _lq_task

user = SimpleNamespace(pk=7)  # the reader's user
uid = 7
user_ids = [1, 2, 3]


@_lq_task
def report(user_id): ...  # the reader's own task
""",
    "docs/admin-and-progress.md": "urlpatterns = []  # the project's own",
}
# What the templates of a page are rendered with (built in the page's module).
TEMPLATE_CONTEXT = {
    "docs/admin-and-progress.md": (
        "from django_leasequeue import Workflow\nfrom tests.support.tasks.basic import add\n\n"
        "result = add.enqueue(1, 2)\n"
        "_workflow = Workflow('Nightly import')\n_workflow.add(add, args=[1, 2])\n"
        "handle = _workflow.enqueue()\n"
    ),
}
# Where a backend, engine or client class is named in settings: each must import.
_IMPORTED_SETTINGS = {"BACKEND", "ENGINE", "CLIENT_CLASS", "CONNECTION_FACTORY"}
OUR_BACKEND = "django_leasequeue.backend.LeaseQueueBackend"


def _blocks(langs: set[str]) -> list[tuple[str, int, docs_snippets.Block]]:
    return [
        (str(doc), index, block)
        for doc in DOCS
        for index, block in enumerate(docs_snippets.blocks(doc))
        if block.lang in langs
    ]


def _id(item: tuple[str, int, docs_snippets.Block]) -> str:
    doc, _index, block = item
    return f"{doc}:{block.line}"


def is_settings(path: str | None, code: str) -> bool:
    """A settings file's part: named so, or nothing but assignments to UPPER_CASE names."""
    if path is not None:
        return path.endswith("settings.py")
    statements = ast.parse(code).body
    return bool(statements) and all(
        isinstance(statement, ast.Assign)
        and all(isinstance(t, ast.Name) and t.id.isupper() for t in statement.targets)
        for statement in statements
    )


def check_settings(code: str) -> None:
    """Run a settings part on its own and check what it names: imports, and our OPTIONS."""
    names: dict[str, Any] = {}
    exec(compile(code, "<settings>", "exec"), names)

    def walk(value: Any) -> Iterator[tuple[str, Any]]:
        if isinstance(value, dict):
            for key, item in value.items():
                yield key, item
                yield from walk(item)

    for key, value in walk({name: value for name, value in names.items() if name.isupper()}):
        if key == "ENGINE":
            import_module(value)
        elif key in _IMPORTED_SETTINGS:
            import_string(value)
    for app in names.get("INSTALLED_APPS", []):
        if isinstance(app, str):
            import_module(app)
    for alias in names.get("TASKS", {}).values():
        if alias.get("BACKEND") == OUR_BACKEND:
            BackendConfig.from_options(alias.get("OPTIONS", {}), alias.get("QUEUES", ()))


def run_in(module: types.ModuleType, code: str, where: str) -> None:
    """Run ``code`` in the module's namespace; show the last expression's value, as a shell."""
    tree = ast.parse(code)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, where, "exec"), module.__dict__)
    if last is not None:
        repr(eval(compile(ast.Expression(last.value), where, "eval"), module.__dict__))


def run_block(module: types.ModuleType, doc: str, block: docs_snippets.Block) -> None:
    where = f"{doc}:{block.line}"
    if block.lang == "django":
        Template(block.code).render(Context(module.__dict__))
        return
    for path, code in docs_snippets.parts(block.code):
        if is_settings(path, code):
            check_settings(code)
        elif docs_snippets.is_module_path(path):
            import_module(docs_snippets.module_name(path))  # page_modules wrote it
        else:
            run_in(module, docs_snippets.as_pasted(code, django.VERSION), where)


def write_modules(doc: str, directory: Path) -> set[str]:
    """Write the page's whole modules under ``directory``, each package with an ``__init__.py``;
    returns their top-level packages."""
    for path, code in docs_snippets.modules(doc).items():
        target = directory / path
        for package in reversed(Path(path).parents[:-1]):  # myapp, then myapp/sub ...
            (directory / package).mkdir(exist_ok=True)
            (directory / package / "__init__.py").touch()
        target.write_text(docs_snippets.as_pasted(code, django.VERSION))
    return {path.split("/")[0] for path in docs_snippets.modules(doc)}


@pytest.fixture
def page_modules(request, tmp_path, monkeypatch) -> Iterator[None]:
    """The page's whole modules, importable while the test runs, forgotten afterwards."""
    directory = tmp_path / "project"
    directory.mkdir()
    packages = write_modules(request.node.callspec.params["doc"], directory)
    monkeypatch.syspath_prepend(str(directory))
    yield
    for name in [name for name in sys.modules if name.split(".")[0] in packages]:
        del sys.modules[name]


@pytest.fixture
def docs_module(monkeypatch, page_modules) -> Iterator[types.ModuleType]:
    """An importable module for a page's snippets (workers find tasks by path), forgotten
    afterwards with the schedules its tasks declared."""
    schedules_before = dict(declared_schedules())
    monkeypatch.setenv("LEASEQUEUE_METRICS_TOKEN", "a-token-from-a-secret")
    module = types.ModuleType("docs_snippets_page")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    with override_settings(TASKS=settings_docs.TASKS):
        yield module
    declared_schedules().clear()
    declared_schedules().update(schedules_before)


SNIPPETS = _blocks({"python", "django"})


@pytest.mark.django_db
@pytest.mark.parametrize(("doc", "index", "block"), SNIPPETS, ids=[_id(item) for item in SNIPPETS])
def test_a_docs_snippet_runs(docs_module, doc, index, block):
    if block.skip:
        pytest.skip(f"{doc}:{block.line}: {block.skip}")
    run_in(docs_module, GLUE.get(doc, ""), f"{doc} (glue)")
    earlier = docs_snippets.blocks(doc)[:index]
    for before in earlier:
        if before.lang == "python" and not before.skip:
            run_block(docs_module, doc, before)
    if block.lang == "django":
        run_in(docs_module, TEMPLATE_CONTEXT[doc], f"{doc} (template context)")
    run_block(docs_module, doc, block)


def test_every_docs_block_of_code_runs_or_says_why_not():
    """Python, templates and shell commands run (here, or in test_docs_commands); any other
    block is data (YAML, INI, text output, diagrams). A skip comment stands before a block."""
    for doc in DOCS:
        blocks = docs_snippets.blocks(doc)
        marked = [block for block in blocks if block.skip]
        assert docs_snippets.skip_markers(doc) == len(marked), f"{doc}: a skip comment off a block"
        for block in marked:
            assert block.lang in RUNNABLE, f"{doc}:{block.line}: only code needs a skip comment"
    ran = [item for item in _blocks(RUNNABLE) if not item[2].skip]
    assert len(ran) >= 30, len(ran)


def test_the_docs_show_the_progress_tag_as_the_readme_does():
    tag = "{% leasequeue_progress result"  # a job's bar (the docs show a workflow's too)
    readme = docs_snippets.block_containing("README.md", tag, "django")
    assert docs_snippets.block_containing("docs/admin-and-progress.md", tag, "django") == readme


@pytest.mark.parametrize("doc", DOCS, ids=str)
def test_a_docs_module_is_whole(doc):
    """A module a page shows whole (``# myapp/tasks.py``) defines or imports every name it uses,
    in its functions too: pasted alone into a project, it runs."""
    for path, code in docs_snippets.modules(doc).items():
        assert docs_snippets.undefined_names(code) == set(), f"{doc}: {path}"


def test_the_module_checker_finds_a_name_a_function_uses_and_nothing_defines():
    code = "import os\n\n\ndef f(path):\n    return os.path.join(path, helper(path))\n"
    assert docs_snippets.undefined_names(code) == {"helper"}
