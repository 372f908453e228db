"""The code blocks of the README and the docs, as a newcomer pastes them into a new project.

A fenced block whose first line is a comment naming a file (``# asgi.py``, ``# myapp/tasks.py``)
goes into that file; further such comments inside the block start the next file (the README's
live-progress block holds ``asgi.py``, ``settings.py`` and ``urls.py``). Other blocks are picked
by what they contain. Where a snippet writes ``NAME = [..., x]`` it means "your list, plus x":
that is the one rewrite applied (to ``NAME = [*NAME, x]``), besides the import the snippet's own
comment gives for Django 5.2.

A block that no test can run (it needs a web server, a benchmark's minutes, or shows a pattern
around the reader's own code) says so in an HTML comment just before it (blank lines between
are fine), which the rendered page does not show: ``<!-- docs-test: skip: needs a web server -->``.

Run ``python -m tests.docs_snippets README.md`` to print what a file gets from a document.
"""

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[\w-]*)\n(?P<body>.*?)^(?P=indent)```", re.M | re.S
)
_SKIP = re.compile(r"^ *<!-- docs-test: skip: (?P<reason>.+?) -->$")
_FILE_HEADER = re.compile(r"^# (?P<path>[\w/]+\.py)\b.*$")
_YOUR_LIST = re.compile(r"^(?P<name>[A-Z_]+) = \[(?P<items>[^\n]*?)\]", re.M)


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int = 0  # of the opening fence, from 1
    skip: str | None = None  # why no test runs it, from its docs-test comment


def blocks(document: str | Path) -> list[Block]:
    """Every fenced block of a markdown file (indented ones dedented), in order."""
    text = (ROOT / document).read_text()
    found = []
    for match in _FENCE.finditer(text):
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
            )
        )
    return found


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
