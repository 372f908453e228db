"""How an error message shows a value a user gave: its ``repr``, cut short with its length, so
that a refused value thousands of characters long leaves the message readable."""

# How many characters of a value a message shows.
SHOWN_LENGTH = 40


def shown(value: object) -> str:
    """``repr(value)``, cut short when long (a string with its length in characters)."""
    if isinstance(value, str) and len(value) > SHOWN_LENGTH:
        return f"{value[:SHOWN_LENGTH]!r}... ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= 2 * SHOWN_LENGTH else f"{text[: 2 * SHOWN_LENGTH]}..."
