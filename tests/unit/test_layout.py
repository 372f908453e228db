"""The package's layout rules: no import cycles, one public API (that Channels stays optional is
tested in test_progress_events)."""

import ast
import importlib
from pathlib import Path

import django_leasequeue

PACKAGE = Path(django_leasequeue.__file__).parent


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
