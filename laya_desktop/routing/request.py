"""What the routing rules see of a request: path, asked model, tags, user text and prompt size.

Extraction never raises on odd shapes (non-dict messages, None content, numbers where text
belongs): the engine validates the body on its own, and a junk part simply contributes no text.
"""
from __future__ import annotations

from dataclasses import dataclass

from laya_desktop.config.message_text import content_texts

# User messages are joined with NUL so that a keyword cannot match across two messages
# (keywords never sensibly contain NUL).
USER_TEXT_SEPARATOR = "\x00"


@dataclass(frozen=True)
class RouteRequest:
    path: str
    model: str | None
    tags: tuple[str, ...]
    user_text_lower: str
    prompt_chars: int


def extract(path: str, body: dict, header_tags: str | None) -> RouteRequest:
    user_parts, prompt_chars = text_parts(body)
    return RouteRequest(
        path=path,
        model=asked_model(body),
        tags=merge_tags(body, header_tags),
        user_text_lower=USER_TEXT_SEPARATOR.join(user_parts).lower(),
        prompt_chars=prompt_chars,
    )


def asked_model(body: dict) -> str | None:
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else None


def merge_tags(body: dict, header_tags: str | None) -> tuple[str, ...]:
    raw = body.get("tags") if isinstance(body, dict) else None
    if raw is None and not header_tags:
        return ()
    if isinstance(raw, str):
        items = raw.split(",")
    elif isinstance(raw, list):
        items = [t for t in raw if isinstance(t, str)]
    else:
        items = []
    if header_tags:
        items = [*items, *header_tags.split(",")]
    if not items:
        return ()
    # dict keeps first-seen order while dropping duplicates
    return tuple(dict.fromkeys(t for t in (i.strip() for i in items) if t))


def text_parts(body: dict) -> tuple[list[str], int]:
    """(user text parts, code points of all message text or of the prompt)."""
    if not isinstance(body, dict):
        return [], 0
    messages = body.get("messages")
    if not isinstance(messages, list):
        if "prompt" in body:
            parts = _prompt_parts(body["prompt"])
            return parts, sum(map(len, parts))
        return [], 0
    # the chat messages, read here rather than in a function of their own: a call less per
    # request, on the cold CPU the engine decides on
    user: list[str] = []
    chars = 0
    for message in messages:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if type(content) is str:  # the common shape, read without a list per message
            chars += len(content)
            if message.get("role") == "user":
                user.append(content)
            continue
        texts = content_texts(content)
        chars += sum(map(len, texts))
        if message.get("role") == "user":
            user.extend(texts)
    return user, chars


def _prompt_parts(prompt) -> list[str]:
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list):
        return [p for p in prompt if isinstance(p, str)]
    return []
