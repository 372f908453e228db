"""The layout rules: in the package, no import cycles and one public API (that Channels stays
optional is tested in test_progress_events); in the tests, only packages beside the conftest,
and no test module imports another."""

import ast
import importlib
from pathlib import Path

import django_leasequeue

PACKAGE = Path(django_leasequeue.__file__).parent
TESTS = PACKAGE.parent / "tests"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(path): path for path in PACKAGE.rglob("*.py") if "migrations" not in path.parts
    }


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules this file imports, anywhere in it (functions included), except
    under ``if TYPE_CHECKING:``. ``from package import name`` counts as the submodule
    ``package.name`` when there is one."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _is_type_checking_block(node):
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module in modules:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    visiting, done = [], set()

    def walk(module: str) -> list[str] | None:
        if module in visiting:
            return [*visiting[visiting.index(module) :], module]
        if module in done:
            return None
        visiting.append(module)
        for target in sorted(graph[module]):
            cycle = walk(target)
            if cycle:
                return cycle
        visiting.pop()
        done.add(module)
        return None

    for module in sorted(graph):
        cycle = walk(module)
        if cycle:
            return cycle
    return None


def test_no_module_of_the_package_takes_part_in_an_import_cycle():
    modules = _modules()
    graph = {name: _imports(path, modules) - {name} for name, path in modules.items()}
    assert _find_cycle(graph) is None, " -> ".join(_find_cycle(graph) or [])


def test_the_cycle_finder_finds_a_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_package_itself_does_not_import_its_public_api_module():
    """Library code imports from the module that defines a name, never from the package root
    (which would import the whole public API, the runtime included, into every module)."""
    modules = _modules()
    importers = [
        name for name, path in modules.items() if "django_leasequeue" in _imports(path, modules)
    ]
    assert importers == []


def test_every_public_name_is_importable_from_the_package():
    public = importlib.import_module("django_leasequeue")
    assert {"task", "LeaseTask", "JobStatus", "JobContext", "LeaseLost"} <= set(public.__all__)
    assert {"InvalidTaskArguments", "fenced_atomic"} <= set(public.__all__)
    for name in public.__all__:
        assert getattr(public, name) is not None, name


# The tests


def _imported_names(source: str, package: str) -> set[str]:
    """Every dotted name an import of ``source`` may load (functions and TYPE_CHECKING blocks
    included): ``import a.b`` gives ``a.b``; ``from a import b`` gives ``a`` and ``a.b``, since
    ``b`` may be a module; a relative import is resolved against ``package``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[: len(base) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _test_modules_imported(path: Path) -> set[str]:
    """The test modules (files ``tests/**/test_*.py``) that the file at ``path`` imports."""
    package = ".".join(path.relative_to(TESTS.parent).parent.parts)
    return {
        name
        for name in _imported_names(path.read_text(), package)
        if name.rpartition(".")[2].startswith("test_")
        and TESTS.parent.joinpath(*name.split(".")).with_suffix(".py").is_file()
    }


def test_no_test_module_imports_another():
    """What tests share lives in modules that hold no tests (``tests/support/``, a conftest,
    ``tests/example/demo_site.py``): a test function imported by name is collected twice, and
    a test module's marks, fixtures and setup are its own, not a library for other modules."""
    importers = {
        str(path.relative_to(TESTS.parent)): imported
        for path in sorted(TESTS.rglob("test_*.py"))
        if (imported := _test_modules_imported(path))
    }
    assert importers == {}


def test_the_tests_folder_holds_only_its_conftest_and_packages():
    """At the root of ``tests/``: ``conftest.py``, ``__init__.py`` and packages (the test
    packages, and ``support``, where the settings, tasks, test app and helpers live)."""
    strays = sorted(
        entry.name
        for entry in TESTS.iterdir()
        if entry.name not in {"__init__.py", "conftest.py", "__pycache__"}
        and not (entry.is_dir() and (entry / "__init__.py").is_file())
    )
    assert strays == []


def test_the_import_finder_sees_every_way_to_import_a_test_module():
    found = _imported_names(
        "import tests.a.test_x\n"
        "from tests.b import test_y\n"
        "from .test_z import helper\n"
        "def later():\n    from ..c.test_w import thing\n",
        "tests.example",
    )
    assert {"tests.a.test_x", "tests.b.test_y", "tests.example.test_z", "tests.c.test_w"} <= found


# Names Django gives by convention (a command and a template tag library are named after what a
# user types: `manage.py leasequeue`, `{% load leasequeue %}`), which may repeat.
CONVENTIONAL_MODULE_NAMES = {
    "__init__.py",
    "admin.py",
    "apps.py",
    "models.py",
    "urls.py",
    "views.py",
    "leasequeue.py",
}
CONVENTIONAL_CLASS_NAMES = {"Command", "Meta", "Media"}


def test_no_module_file_name_is_used_twice_in_the_package():
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if "migrations" not in path.parts and path.name not in CONVENTIONAL_MODULE_NAMES:
            seen.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_no_public_class_name_is_used_twice_in_the_package():
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.ClassDef)
                and not node.name.startswith("_")
                and node.name not in CONVENTIONAL_CLASS_NAMES
            ):
                seen.setdefault(node.name, []).append(str(path.relative_to(PACKAGE)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
