"""What a load test sends: built-in prompt mixes (short chat, long context, code with tags) or a
JSONL file, each prompt with the tags its request carries."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

SHORT_CHAT = (
    "Write a haiku about autumn rain.",
    "Explain in two sentences why the sky is blue.",
    "List three uses of a paperclip.",
    "What is the capital of Australia? Answer briefly.",
    "Translate 'good morning, friends' into French and Spanish.",
    "Give me a short tip for staying focused while studying.",
    "Summarize the plot of Romeo and Juliet in one sentence.",
    "Describe the smell of fresh bread to someone who has never smelled it.",
    "Count from one to ten in words.",
    "Suggest a name for a small orange cat.",
    "What is 17 times 23? Show the steps.",
)
CODE = (
    "Write a Python function that reverses a string.",
    "Fix this bug: `for i in range(len(xs)): xs.pop(i)`.",
    "Write a SQL query that counts orders per customer.",
    "Explain what `git rebase -i HEAD~3` does.",
)
_FILLER = ("The committee met on a grey morning to read the quarterly notes again. Each section listed "
           "the shipments, the delays, the names of the drivers and the weather on the road. ")
LONG_CHARS = 6000
MIXES = ("short", "long", "code", "mixed")


@dataclass(frozen=True)
class Prompt:
    text: str
    tags: tuple[str, ...] = field(default_factory=tuple)


def long_text(chars: int, question: str = "Summarize the notes above in one sentence.") -> str:
    """About `chars` characters of filler and then a question: a long context, cheap to make."""
    body = (_FILLER * (chars // len(_FILLER) + 1))[:max(0, chars - len(question) - 2)]
    return f"{body}\n\n{question}"


def builtin(mix: str) -> list[Prompt]:
    if mix == "short":
        return [Prompt(t) for t in SHORT_CHAT]
    if mix == "long":
        return [Prompt(long_text(LONG_CHARS, q)) for q in SHORT_CHAT[:3]]
    if mix == "code":
        return [Prompt(t, ("code",)) for t in CODE]
    if mix == "mixed":   # mostly chat, some code, now and then a long context
        return ([Prompt(t) for t in SHORT_CHAT[:6]] + [Prompt(t, ("code",)) for t in CODE[:3]]
                + [Prompt(long_text(LONG_CHARS))])
    raise ValueError(f"unknown prompt mix {mix!r} (valid: {', '.join(MIXES)})")


def read_jsonl(path: str) -> list[Prompt]:
    """One JSON object a line: {"prompt": "...", "tags": ["code"]}; blank lines are skipped."""
    prompts = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{path}:{n}: not JSON ({exc})") from None
            text = item.get("prompt") if isinstance(item, dict) else None
            tags = item.get("tags", []) if isinstance(item, dict) else None
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"{path}:{n}: needs a non-empty \"prompt\" string")
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise ValueError(f"{path}:{n}: \"tags\" must be a list of strings")
            prompts.append(Prompt(text, tuple(tags)))
    if not prompts:
        raise ValueError(f"{path}: no prompts")
    return prompts


def padded(prompts: list[Prompt], chars: int) -> list[Prompt]:
    """Each prompt after filler up to `chars` characters: the sweep's rising prompt length."""
    if chars <= 0:
        return prompts
    return [Prompt(long_text(chars, p.text), p.tags) for p in prompts]
