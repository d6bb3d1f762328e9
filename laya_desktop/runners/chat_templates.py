"""Chat messages -> prompt text, by the GGUF's own template or a default for its architecture.

Order of choice: the spec's `chat_format` (a llama-cpp-python chat format name), then the GGUF's
`tokenizer.chat_template` (rendered with Jinja2 like llama-cpp-python does), then a default by
architecture: Gemma's turn format for gemma*, ChatML otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from laya_desktop.runners.protocol import BadRequest, message_text


@dataclass
class ChatPrompt:
    text: str
    stop: list[str] = field(default_factory=list)
    add_special: bool = True     # False when the text already carries BOS


Formatter = Callable[[list[dict]], ChatPrompt]


def normalize_messages(messages) -> list[dict]:
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages must be a non-empty list")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise BadRequest(f"messages[{i}] needs a string 'role'")
        out.append({**m, "content": message_text(m.get("content"))})
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

    def render(messages: list[dict]) -> ChatPrompt:
        try:
            resp = formatter(messages=messages)
        except Exception as exc:  # the template's raise_exception, or a template bug
            raise BadRequest(f"chat template: {exc}") from None
        return ChatPrompt(resp.prompt, stop=[], add_special=not resp.added_special)
    return render


def select_formatter(chat_format: str | None, template: str | None, architecture: str,
                     bos: str, eos: str) -> tuple[str, Formatter]:
    """(name reported in the runner's info, formatter)."""
    if chat_format:
        if chat_format in _OWN_FORMATS:
            return chat_format, _OWN_FORMATS[chat_format]
        return chat_format, _llama_cpp_python_format(chat_format)
    if template:
        return "gguf", _jinja_format(template, bos, eos)
    if architecture.startswith("gemma"):
        return "gemma", format_gemma
    return "chatml", format_chatml
