"""One request, whatever API it came in on, as the shared generation path sees it.

Each API's adapter parses its body into a `Call`: the OpenAI chat-completions body that the rules
see and that a chat-completions upstream receives (`chat`), and the runner command a local model
gets (`command`). The native body stays too, for a remote that speaks the same API.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

APIS = ("chat", "completions", "responses", "messages", "embeddings")


@dataclass
class Call:
    api: str                       # one of APIS; also the request log's `api`
    path: str
    body: dict                     # the request as it came
    chat: dict                     # as an OpenAI chat-completions (or completions) body
    command: dict                  # the runner command: kind, messages | prompt | inputs, params, tools
    stream: bool = False
    tools: list[dict] = field(default_factory=list)   # OpenAI function tools
    tool_choice: Any = "auto"      # "auto" | "none" | "required" | {"type": "function", "function": {"name"}}
    parallel_tool_calls: bool = True
    # Parts that only a remote model can take (an image, an audio clip): refused by name locally.
    remote_only: list[str] = field(default_factory=list)
    # This API's name for a chat-completions field, so a refusal names what the client sent.
    field_names: dict[str, str] = field(default_factory=dict)
    options: dict = field(default_factory=dict)       # the API's own output options

    @property
    def parses_tools(self) -> bool:
        return bool(self.tools) and self.tool_choice != "none"

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]

    def field(self, chat_name: str) -> str:
        return self.field_names.get(chat_name, chat_name)
