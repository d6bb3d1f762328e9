"""Prompt tokens for a generate command from an mlx-lm (Hugging Face) tokenizer.

A chat goes through the tokenizer's own template; tools go to it when the template renders them
(`native_tools`), otherwise they are written into the messages as text (tool_prompt.py). A
tokenizer without a template gets "role: content" lines.
"""
from __future__ import annotations

from laya_desktop.runners import protocol as P
from laya_desktop.runners.chat_templates import normalize_messages
from laya_desktop.runners.tool_prompt import (check_tools, for_template, inline_tools,
                                              template_knows_tools)


class MlxPrompt:
    def __init__(self, tokenizer):
        self._tok = tokenizer
        template = getattr(tokenizer, "chat_template", None)
        # Named templates ({"default": ..., "tool_use": ...}): transformers picks tool_use itself.
        templates = template.values() if isinstance(template, dict) else [template]
        self.native_tools = any(isinstance(t, str) and template_knows_tools(t) for t in templates)

    def tokens(self, cmd: dict) -> list[int]:
        """The prompt's tokens; BadRequest for anything about the command that stops it."""
        try:
            return self._tokens(cmd)
        except P.BadRequest:
            raise
        except Exception as exc:  # a template or tokenizer error is the request's fault
            raise P.BadRequest(f"cannot build the prompt: {exc}") from None

    def _tokens(self, cmd: dict) -> list[int]:
        tok = self._tok
        if cmd.get("kind") != "chat":
            prompt = cmd.get("prompt")
            if not isinstance(prompt, str):
                raise P.BadRequest("prompt must be a string")
            return list(tok.encode(prompt))
        messages = normalize_messages(cmd.get("messages"))
        tools = check_tools(cmd.get("tools"))
        if self.native_tools:
            return list(tok.apply_chat_template(for_template(messages), tools=tools,
                                                add_generation_prompt=True))
        messages = inline_tools(messages, tools, tool_role=False)
        if tok.has_chat_template:
            return list(tok.apply_chat_template(messages, add_generation_prompt=True))
        text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"
        return list(tok.encode(text))
