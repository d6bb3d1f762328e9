"""Whether a reply being streamed has got stuck repeating one line. Pure.

The repeat penalty makes a loop less likely; this catches the loop that happens anyway, so that
the chat stops it instead of waiting for max tokens.
"""
from __future__ import annotations

REPEATS = 8          # identical lines in a row; a real answer hardly ever has eight
MIN_LINE_CHARS = 4   # "}" or "---" lines repeat legitimately


def repeated_line(text: str, repeats: int = REPEATS) -> str | None:
    """The line repeated `repeats` times in a row at the end of `text` (complete lines only)."""
    lines = [line.strip() for line in text.split("\n")[:-1]]   # the last one may be unfinished
    lines = [line for line in lines if line]
    if len(lines) < repeats:
        return None
    tail = lines[-repeats:]
    if len(tail[0]) >= MIN_LINE_CHARS and all(line == tail[0] for line in tail):
        return tail[0]
    return None
