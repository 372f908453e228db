"""The code blocks of the README and the docs, as a newcomer pastes them into a new project.

A fenced block whose first line is a comment naming a file (``# asgi.py``, ``# myapp/tasks.py``)
goes into that file; further such comments inside the block start the next file (the README's
live-progress block holds ``asgi.py``, ``settings.py`` and ``urls.py``). Other blocks are picked
by what they contain. Where a snippet writes ``NAME = [..., x]`` it means "your list, plus x":
that is the one rewrite applied (to ``NAME = [*NAME, x]``), besides the import the snippet's own
comment gives for Django 5.2.

A file in a package (``# myapp/tasks.py``) is a whole module, as the reader saves it: a page's
blocks that name it are joined (skipped blocks left out), the tests write it into that package
and import it, and other blocks import from it as the reader's code would (``from myapp.tasks
import fetch``). It must define every name it uses (``undefined_names``). A bare ``tasks.py`` is
an excerpt, run with the page's other blocks.

A block that no test can run (it needs a web server, a benchmark's minutes, or shows a pattern
around the reader's own code) says so in an HTML comment just before it (blank lines between
are fine), which the rendered page does not show: ``<!-- docs-test: skip: needs a web server -->``.

Run ``python -m tests.support.docs_snippets README.md`` to print what a file gets from a document.
"""

import builtins
import re
import symtable
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[\w-]*)\n(?P<body>.*?)^(?P=indent)```", re.M | re.S
)
_SKIP = re.compile(r"^ *<!-- docs-test: skip: (?P<reason>.+?) -->$")
_FILE_HEADER = re.compile(r"^# (?P<path>[\w/]+\.py)\b.*$")
_YOUR_LIST = re.compile(r"^(?P<name>[A-Z_]+) = \[(?P<items>[^\n]*?)\]", re.M)
_HEADING = re.compile(r"^#+ (?P<title>.+?) *$", re.M)


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int = 0  # of the opening fence, from 1
    skip: str | None = None  # why no test runs it, from its docs-test comment
    section: str = ""  # the title of the heading above it


def blocks(document: str | Path) -> list[Block]:
    """Every fenced block of a markdown file (indented ones dedented), in order."""
    text = (ROOT / document).read_text()
    found = []
    section, searched_to = "", 0
    for match in _FENCE.finditer(text):
        for heading in _HEADING.finditer(text, searched_to, match.start()):
            section = heading["title"]
        searched_to = match.end()
        indent = len(match["indent"])
        lines = [line[indent:] for line in match["body"].splitlines()]
        before = text[: match.start()].rstrip("\n").rpartition("\n")[2]
        marker = _SKIP.match(before)
        found.append(
            Block(
                match["lang"],
                "\n".join(lines).strip("\n") + "\n",
                line=text.count("\n", 0, match.start()) + 1,
                skip=marker["reason"] if marker else None,
                section=section,
            )
        )
    return found


def prose(document: str | Path) -> list[tuple[int, str]]:
    """The document's lines outside its fenced blocks: ``(line number from 1, text)``."""
    blanked = _FENCE.sub(lambda block: "\n" * block[0].count("\n"), (ROOT / document).read_text())
    return [(number, line) for number, line in enumerate(blanked.splitlines(), 1) if line.strip()]


def skip_markers(document: str | Path) -> int:
    """How many docs-test comments the document holds (each must stand before a block)."""
    return sum(1 for line in (ROOT / document).read_text().splitlines() if _SKIP.match(line))


def parts(code: str) -> list[tuple[str | None, str]]:
    """A python block cut at its file-header comments: ``(path or None, code)`` in order."""
    found: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in code.splitlines():
        header = _FILE_HEADER.match(line)
        if header:
            found.append((header["path"], [line]))
        else:
            found[-1][1].append(line)
    return [
        (path, "\n".join(lines).strip("\n") + "\n")
        for path, lines in found
        if path is not None or any(line.strip() for line in lines)
    ]


def files(document: str | Path) -> dict[str, str]:
    """``path -> code`` of the blocks that name their file; a file named twice gets both."""
    result: dict[str, str] = {}
    for block in blocks(document):
        if block.lang != "python":
            continue
        for path, code in parts(block.code):
            if path is not None:
                result[path] = result.get(path, "") + ("\n\n" if path in result else "") + code
    return result


def is_module_path(path: str | None) -> bool:
    """A file in a package (``myapp/tasks.py``): a whole module of the reader's, not a settings
    file (``mysite/settings.py`` is checked as settings)."""
    return path is not None and "/" in path and not path.endswith("settings.py")


def module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def modules(document: str | Path) -> dict[str, str]:
    """``path -> code`` of the document's whole modules (``is_module_path``), from the blocks
    that run (not those marked skip), joined in order."""
    result: dict[str, str] = {}
    for block in blocks(document):
        if block.lang != "python" or block.skip:
            continue
        for path, code in parts(block.code):
            if path is not None and is_module_path(path):
                result[path] = result.get(path, "") + ("\n\n" if path in result else "") + code
    return result


def undefined_names(code: str) -> set[str]:
    """Names the module uses, anywhere (function bodies included), that it neither defines nor
    imports and that are not builtins: what a reader copying it alone would miss."""
    top = symtable.symtable(code, "<module>", "exec")
    tables = [top]
    for table in tables:  # grows as it goes: every scope, nested ones included
        tables.extend(table.get_children())
    symbols = [(table, symbol) for table in tables for symbol in table.get_symbols()]
    defined = set(dir(builtins)) | {
        symbol.get_name()
        for table, symbol in symbols
        if (table is top or symbol.is_declared_global())
        and (symbol.is_assigned() or symbol.is_imported())
    }
    return {
        symbol.get_name()
        for table, symbol in symbols
        if symbol.is_referenced()
        and (table is top or symbol.is_global())
        and symbol.get_name() not in defined
    }


def block_containing(document: str | Path, text: str, lang: str | None = None) -> str:
    """The one block of ``document`` (of language ``lang``) that contains ``text``."""
    matching = [
        b.code for b in blocks(document) if text in b.code and (lang is None or b.lang == lang)
    ]
    if len(matching) != 1:
        raise LookupError(f"{len(matching)} blocks of {document} contain {text!r}")
    return matching[0]


def as_pasted(code: str, django_version: tuple[int, ...]) -> str:
    """The snippet as it goes into a project: ``[..., x]`` extends the project's list, and on
    Django < 6 the tasks import is the one the snippet's comment names."""
    code = _YOUR_LIST.sub(
        lambda m: f"{m['name']} = [{m['items'].replace('...', '*' + m['name'])}]", code
    )
    if django_version < (6,):
        code = code.replace("from django.tasks import task", "from django_tasks import task")
    return code


if __name__ == "__main__":
    for path, code in files(sys.argv[1]).items():
        print(f"=== {path}\n{code}")
