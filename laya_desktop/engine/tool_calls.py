"""Tool calls out of a local model's text, in the formats of the common chat-template families.

- Hermes / Qwen: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, one block per call;
- Mistral: `[TOOL_CALLS][{"name": ..., "arguments": {...}}]` or `[TOOL_CALLS]name[ARGS]{...}`;
- Llama 3.1: `<|python_tag|>{"name": ..., "parameters": {...}}` (several joined by `;`), or
  `<function=name>{...}</function>`;
- plain JSON: the whole answer is an object (or an array of them) with `name` and `arguments` or
  `parameters`, possibly in a ```json fence. This is also what a forced call's grammar produces.

Text before a marker streams as it comes; from a marker on, the text is held until the end, and
so is an answer that opens like JSON. A held text that yields no call of a known tool is given
back as text, so nothing the model wrote is lost.
"""
from __future__ import annotations

import json
import re
import uuid

from laya_desktop.engine.outputs import ToolCall

MARKERS = ("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function=")
_JSON_OPENERS = ("{", "[", "```")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)
_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FUNCTION_TAG = re.compile(r"<function=([^>]+)>\s*(.*?)\s*(?:</function>|$)", re.S)
_MISTRAL_ARGS = re.compile(r"([A-Za-z0-9_.:-]+)\s*(?:\[ARGS\])?\s*(\{)", re.S)
_decoder = json.JSONDecoder()


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


class ToolCallParser:
    def __init__(self, tool_names: list[str], *, parallel: bool = True, forced: bool = False):
        self.names = set(tool_names)
        self.parallel = parallel
        self._held = ""
        self._holding = forced        # a forced call is JSON from its first character
        self._emitted_any = False

    def feed(self, text: str) -> str:
        """Add generated text; returns the part that is plain text for certain."""
        if self._holding:
            self._held += text
            return ""
        buf = self._held + text
        if not self._emitted_any:
            stripped = buf.lstrip()
            if not stripped or any(o.startswith(stripped[:3]) or stripped.startswith(o)
                                   for o in _JSON_OPENERS):
                if stripped.startswith(_JSON_OPENERS):
                    self._holding = True
                self._held = buf
                return ""
        cut = _first_marker(buf)
        if cut is not None:
            self._holding = True
            self._held = buf[cut:]
            return self._emit(buf[:cut])
        keep = _partial_marker_len(buf)
        self._held = buf[len(buf) - keep:] if keep else ""
        return self._emit(buf[:len(buf) - keep])

    def _emit(self, text: str) -> str:
        if text:
            self._emitted_any = True
        return text

    def finish(self) -> tuple[str, list[ToolCall]]:
        """(the held text that is not a call, the calls), at the end of generation."""
        held, self._held = self._held, ""
        calls, rest = parse_tool_calls(held, self.names)
        if not calls:
            return held, []
        if not self.parallel:
            calls = calls[:1]
        return rest, calls


def _first_marker(text: str) -> int | None:
    found = [i for i in (text.find(m) for m in MARKERS) if i >= 0]
    return min(found) if found else None


def _partial_marker_len(text: str) -> int:
    best = 0
    for marker in MARKERS:
        for k in range(min(len(marker) - 1, len(text)), best, -1):
            if text.endswith(marker[:k]):
                best = k
                break
    return best


def parse_tool_calls(text: str, names: set[str]) -> tuple[list[ToolCall], str]:
    """(calls of known tools, the text left over), trying each family's format in turn."""
    stripped = text.strip()
    if "<tool_call>" in stripped:
        calls = [c for body in _HERMES.findall(stripped) for c in _calls_from_json_text(body, names)]
        return calls, _HERMES.sub("", stripped).strip()
    if "<function=" in stripped:
        calls = []
        for name, body in _FUNCTION_TAG.findall(stripped):
            args = _json_prefix(body)
            if name.strip() in names and isinstance(args, dict):
                calls.append(_call(name.strip(), args))
        return calls, _FUNCTION_TAG.sub("", stripped).strip()
    if stripped.startswith("[TOOL_CALLS]"):
        return _mistral(stripped[len("[TOOL_CALLS]"):].strip(), names), ""
    if stripped.startswith("<|python_tag|>"):
        body = stripped[len("<|python_tag|>"):]
        calls = [c for part in body.split(";") for c in _calls_from_json_text(part, names)]
        return calls, ""
    fenced = _FENCE.match(stripped)
    return _calls_from_json_text(fenced.group(1) if fenced else stripped, names), ""


def _mistral(body: str, names: set[str]) -> list[ToolCall]:
    if body.startswith(("[", "{")):
        return _calls_from_json_text(body, names)
    calls = []
    pos = 0
    while True:   # name[ARGS]{...} name[ARGS]{...}
        m = _MISTRAL_ARGS.search(body, pos)
        if not m:
            return calls
        try:
            args, end = _decoder.raw_decode(body, m.start(2))
        except json.JSONDecodeError:
            return calls
        if m.group(1) in names and isinstance(args, dict):
            calls.append(_call(m.group(1), args))
        pos = end


def _json_prefix(text: str):
    text = text.strip()
    try:
        value, _ = _decoder.raw_decode(text)
    except json.JSONDecodeError:
        return None
    return value


def _calls_from_json_text(text: str, names: set[str]) -> list[ToolCall]:
    value = _json_prefix(text)
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        call = _call_from_object(item, names)
        if call is not None:
            calls.append(call)
    return calls


def _call_from_object(obj, names: set[str]) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    fn = obj.get("function") if isinstance(obj.get("function"), dict) else obj
    name = fn.get("name")
    if not isinstance(name, str) or name not in names:
        return None
    args = fn.get("arguments", fn.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if not isinstance(args, dict):
        return None
    return _call(name, args)


def _call(name: str, args: dict) -> ToolCall:
    return ToolCall(new_call_id(), name, json.dumps(args, ensure_ascii=False))
