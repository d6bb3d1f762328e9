"""Whether a reply being streamed has got stuck repeating itself. Pure.

The repeat penalty makes a loop less likely; this catches the loop that happens anyway, so that
the chat stops it instead of waiting for max tokens. Two shapes are seen: one line again and
again, and a base model echoing a phrase (often the prompt) on one line with no newline at all.
"""
from __future__ import annotations

REPEATS = 8          # identical lines in a row; a real answer hardly ever has eight
MIN_LINE_CHARS = 4   # "}" or "---" lines repeat legitimately
UNIT_REPEATS = 5     # a stretch of text repeated back to back this many times...
MIN_UNIT, MAX_UNIT = 20, 400   # ...at least this long: "0, 0, 0" or a table rule is not a loop


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


def repeated_stretch(text: str, repeats: int = UNIT_REPEATS) -> str | None:
    """The shortest stretch that `text` ends with `repeats` copies of, back to back. A periodic
    tail matches whatever the phase, so a reply cut mid-copy is found too."""
    n = len(text)
    for size in range(MIN_UNIT, min(MAX_UNIT, n // repeats) + 1):
        if text[n - 1] != text[n - 1 - size]:
            continue            # the quick no: most sizes fail on the last character
        unit = text[n - size:]
        if all(text.endswith(unit, 0, n - k * size) for k in range(1, repeats)):
            return unit
    return None


def repetition(text: str) -> str | None:
    """What the reply keeps repeating, or None."""
    tail = text[-REPEATS * MAX_UNIT:]   # a loop is at the end; the check costs the same per call
    return repeated_line(tail) or repeated_stretch(tail)


def without_repeats(text: str, repeated: str) -> str:
    """`text` with its trailing copies of `repeated` cut down to one: what is kept of a looping
    reply, shown and sent back (a loop sent back invites the model to go on looping)."""
    unit = repeated.strip()
    body = text.rstrip()
    if not unit:
        return body
    last = body.rfind(unit)
    if last >= 0 and unit.startswith(body[last + len(unit):].strip()):
        body = body[:last + len(unit)]   # the copy still being written when it was stopped
    while body.endswith(unit):
        shorter = body[:-len(unit)].rstrip()
        if not shorter.endswith(unit):
            break
        body = shorter
    return body
