"""A reply cut into the blocks the chat draws: prose (Markdown) and code (fenced, JSON, tool calls).

Qt-free and pure, so that the view, the copy buttons and the tests all see the same blocks: a copy
link names a block by its index in `blocks_of(...)`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

# CommonMark fences: up to three spaces, then ``` or ~~~ (three or more), then an info string.
_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)[^`]*$")


@dataclass(frozen=True)
class Block:
    kind: str            # "prose" or "code"
    text: str
    lang: str = ""
    title: str = ""      # what the code is, when not the reply's own: a tool call's name


def split_fences(text: str) -> list[Block]:
    """Prose and fenced code blocks, in order. A fence still open at the end (a reply being
    streamed) is code up to the end, so that the code box appears while it is written."""
    blocks: list[Block] = []
    prose: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        opened = _OPEN.match(lines[i])
        if not opened:
            prose.append(lines[i])
            i += 1
            continue
        fence, lang = opened.group(1), opened.group(2)
        close = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        body: list[str] = []
        i += 1
        while i < len(lines) and not close.match(lines[i]):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        _flush(prose, blocks)
        blocks.append(Block("code", "\n".join(body), lang))
    _flush(prose, blocks)
    return blocks


def _flush(prose: list[str], blocks: list[Block]) -> None:
    text = "\n".join(prose).strip("\n")
    if text.strip():
        blocks.append(Block("prose", text))
    prose.clear()


def pretty_json(text: str) -> str | None:
    """`text` pretty-printed when it is one JSON object or array, else None."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return json.dumps(value, indent=2, ensure_ascii=False)


def blocks_of(text: str, tool_calls: list[dict] | None = None) -> list[Block]:
    """The blocks of one message: a reply that is JSON as one JSON code block, else its prose and
    fences; then one code block per tool call, arguments pretty-printed once they are whole."""
    as_json = pretty_json(text)
    blocks = [Block("code", as_json, "json")] if as_json is not None else split_fences(text)
    for call in tool_calls or []:
        arguments = call.get("arguments") or ""
        blocks.append(Block("code", pretty_json(arguments) or arguments, "json",
                            title=call.get("name") or "?"))
    return blocks
