"""What the management commands print for a person: text from the database, a job or an
argument with its control characters written out as escapes.

A pause reason, a queue name, a task path or an error message can hold anything a terminal acts
on rather than prints: ``\\x1b[2J`` clears the screen, an OSC sequence retitles the window, a
bidirectional override reorders what follows. ``--json`` output is escaped by JSON itself.
"""

# The escapes Python's own string literals use for the common ones.
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: object) -> str:
    """``text`` with every character that is not printable (C0 and C1 controls, DEL, format
    characters such as bidirectional overrides, line and paragraph separators) written as an
    escape: ``\\x1b``, ``\\u202e``, ``\\n``. Printable text comes back as it is."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
