"""Migrations after the squash stand alone (issue 36): none imports another migration or edits
SQL text; a migration that changes a function carries or loads a frozen copy of it."""

import ast
import importlib
from pathlib import Path

import django_leasequeue.migrations

MIGRATIONS = Path(django_leasequeue.migrations.__file__).parent
SQUASH = "0001_squashed_0023_unique_keys_per_task"


def _replaced() -> set[str]:
    squash = importlib.import_module(f"django_leasequeue.migrations.{SQUASH}")
    return {name for _app, name in squash.Migration.replaces}


def _standing_alone_broken(source: str) -> list[str]:
    """What in a migration's source ties it to another migration or patches SQL text."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and "migrations" in (node.module or ""):
            found.append(f"line {node.lineno}: imports from {node.module}")
        elif isinstance(node, ast.Import) and any("migrations" in a.name for a in node.names):
            found.append(f"line {node.lineno}: imports a migrations module")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if name in {"import_module", "replace", "__import__"}:
                found.append(f"line {node.lineno}: calls {name}()")
    return found


def test_the_check_sees_what_the_replaced_migrations_did():
    patched = (MIGRATIONS / "0020_cached_plans_by_key.py").read_text()
    assert any("import_module" in problem for problem in _standing_alone_broken(patched))
    assert any("replace" in problem for problem in _standing_alone_broken(patched))


def test_no_migration_after_the_squash_imports_another_or_edits_sql_text():
    current = [path for path in sorted(MIGRATIONS.glob("0*.py")) if path.stem not in _replaced()]
    assert [path.stem for path in current][:1] == [SQUASH]
    assert len(current) >= 3
    problems = {
        path.name: found for path in current if (found := _standing_alone_broken(path.read_text()))
    }
    assert problems == {}
