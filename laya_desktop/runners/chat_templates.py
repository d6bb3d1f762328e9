"""Chat messages (and tools) -> prompt text, by the GGUF's own template or a default format.

Order of choice: the spec's `chat_format` (a llama-cpp-python chat format name), then the GGUF's
`tokenizer.chat_template` (rendered with Jinja2 like llama-cpp-python does), then a default by
architecture: Gemma's turn format for gemma*, ChatML otherwise. A Jinja template that reads
`tools` renders tools and tool calls itself; every other format gets them as text (tool_prompt).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

from laya_desktop.runners.protocol import BadRequest, message_text
from laya_desktop.runners.tool_prompt import for_template, inline_tools, template_knows_tools


@dataclass
class ChatPrompt:
    text: str
    stop: list[str] = field(default_factory=list)
    add_special: bool = True     # False when the text already carries BOS


Formatter = Callable[..., ChatPrompt]    # (messages) or, for a template with tools, (messages, tools)


@dataclass
class ChatFormat:
    name: str                   # reported in the runner's info as chat_format
    formatter: Formatter
    native_tools: bool = False  # the template renders `tools` itself
    tool_role: bool = False     # without native tools: the format has a `tool` turn
    tools_formatter: Formatter | None = None   # the GGUF's `tool_use` template, for requests with tools

    @property
    def tool_template(self) -> bool:
        """Requests with tools are rendered by a template of the model's own."""
        return self.native_tools or self.tools_formatter is not None

    def render(self, messages: list[dict], tools: list[dict] | None = None) -> ChatPrompt:
        if tools and self.tools_formatter is not None and not self.native_tools:
            return self.tools_formatter(for_template(messages), tools)
        if self.native_tools:
            return self.formatter(for_template(messages), tools)
        return self.formatter(inline_tools(messages, tools, self.tool_role))


def normalize_messages(messages) -> list[dict]:
    """Content flattened to text; tool_calls, tool_call_id and name kept for the template."""
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages must be a non-empty list")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise BadRequest(f"messages[{i}] needs a string 'role'")
        message = {**m, "content": message_text(m.get("content"))}
        if m.get("tool_calls"):
            message["tool_calls"] = _tool_calls(m["tool_calls"], f"messages[{i}].tool_calls")
        else:
            message.pop("tool_calls", None)
        out.append(message)
    return out


def _tool_calls(calls, path: str) -> list[dict]:
    if not isinstance(calls, list):
        raise BadRequest(f"{path} must be a list")
    out = []
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise BadRequest(f"{path}[{j}] needs function.name")
        arguments = fn.get("arguments")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        out.append({"id": str(call.get("id") or f"call_{j}"), "type": "function",
                    "function": {"name": fn["name"], "arguments": arguments}})
    return out


def format_gemma(messages: list[dict]) -> ChatPrompt:
    """Gemma has no system role: the system prompt goes first into the first user turn."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    parts = []
    for m in messages:
        if m["role"] == "system":
            continue
        role = "model" if m["role"] == "assistant" else "user"
        content = m["content"]
        if system and role == "user":
            content, system = f"{system}\n\n{content}", ""
        parts.append(f"<start_of_turn>{role}\n{content}<end_of_turn>\n")
    if system:  # only a system message
        parts.append(f"<start_of_turn>user\n{system}<end_of_turn>\n")
    parts.append("<start_of_turn>model\n")
    return ChatPrompt("".join(parts), stop=["<end_of_turn>"])


def format_chatml(messages: list[dict]) -> ChatPrompt:
    parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    parts.append("<|im_start|>assistant\n")
    return ChatPrompt("".join(parts), stop=["<|im_end|>"])


_OWN_FORMATS: dict[str, Formatter] = {"gemma": format_gemma, "chatml": format_chatml}


def _llama_cpp_python_format(name: str) -> Formatter:
    """A chat format registered in llama-cpp-python. Its registry keeps only the completion
    handler, which closes over the plain formatter function; take that out."""
    from llama_cpp import llama_chat_format as lcf

    registry = lcf.LlamaChatCompletionHandlerRegistry()
    try:
        handler = registry.get_chat_completion_handler_by_name(name)
    except Exception:  # LlamaChatCompletionHandlerNotFoundException
        handler = None
    formatter = None
    for cell in getattr(handler, "__closure__", None) or ():
        value = cell.cell_contents
        if callable(value) and getattr(value, "__name__", "").startswith("format_"):
            formatter = value
    if formatter is None:
        valid = sorted(set(_OWN_FORMATS) | set(_registered_formats()))
        raise ValueError(f"unknown chat_format {name!r} (valid: {', '.join(valid)})")

    def render(messages: list[dict]) -> ChatPrompt:
        resp = formatter(messages=messages)
        stop = resp.stop if isinstance(resp.stop, list) else ([resp.stop] if resp.stop else [])
        return ChatPrompt(resp.prompt, stop=stop, add_special=not resp.added_special)
    return render


def _registered_formats() -> list[str]:
    from llama_cpp import llama_chat_format as lcf
    handlers = getattr(lcf.LlamaChatCompletionHandlerRegistry(), "_chat_handlers", {})
    return [name for name, h in handlers.items()
            if any(callable(c.cell_contents) and getattr(c.cell_contents, "__name__", "").startswith("format_")
                   for c in (getattr(h, "__closure__", None) or ()))]


def _jinja_format(template: str, bos: str, eos: str) -> Formatter:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    formatter = Jinja2ChatFormatter(template=template, bos_token=bos, eos_token=eos)

    def render(messages: list[dict], tools: list[dict] | None = None) -> ChatPrompt:
        try:
            resp = formatter(messages=messages, tools=tools)
        except Exception as exc:  # the template's raise_exception, or a template bug
            raise BadRequest(f"chat template: {exc}") from None
        return ChatPrompt(resp.prompt, stop=[], add_special=not resp.added_special)
    return render


def select_format(chat_format: str | None, template: str | None, architecture: str,
                  bos: str, eos: str, tool_use_template: str | None = None) -> ChatFormat:
    """`tool_use_template`: the GGUF's `tokenizer.chat_template.tool_use`, which some models
    (Hermes 2 Pro) carry beside a default template that knows no tools."""
    if chat_format:
        if chat_format in _OWN_FORMATS:
            return ChatFormat(chat_format, _OWN_FORMATS[chat_format], tool_role=chat_format == "chatml")
        return ChatFormat(chat_format, _llama_cpp_python_format(chat_format))
    if template:
        tools_formatter = None
        if template_knows_tools(tool_use_template):
            tools_formatter = _jinja_format(tool_use_template, bos, eos)
        return ChatFormat("gguf", _jinja_format(template, bos, eos),
                          native_tools=template_knows_tools(template), tools_formatter=tools_formatter)
    if architecture.startswith("gemma"):
        return ChatFormat("gemma", format_gemma)
    return ChatFormat("chatml", format_chatml, tool_role=True)
