"""The text of a chat message's content, for every layer that reads it: the request checks and the
runner command (engine), the routing rules (routing) and the chat templates (runners). It sits in
config, the lowest layer those three share.

Content is a string or an array of parts; the text parts are OpenAI's `text` and the Responses
API's `input_text` / `output_text` (a part without a type is text). Other parts (images, audio,
files) and odd shapes have no text: callers that must refuse them check the shape themselves.
"""
from __future__ import annotations

from typing import Any

TEXT_PART_TYPES = ("text", "input_text", "output_text")


def content_texts(content: Any) -> list[str]:
    """The text pieces of a message's content, in order."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [part["text"] for part in content
                if isinstance(part, dict) and part.get("type", "text") in TEXT_PART_TYPES
                and isinstance(part.get("text"), str)]
    return []


def message_text(content: Any) -> str:
    """A message's content as one string."""
    return "".join(content_texts(content))
