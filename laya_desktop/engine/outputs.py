"""What a generation produces, whoever served it: the one currency between backends and APIs.

A local runner's events, a remote chat-completions stream and a remote Anthropic stream are all
turned into these; each API's writer turns them into its own wire format (llama-server's design:
one generation path, one writer per API). A stream of outputs is zero or more `TextDelta` and
`ToolCall`, then exactly one `Finished`, `Embedded` or `Failed`.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cached_from: str | None = None   # a local runner's: "slot" | "ram" | "disk"


@dataclass(slots=True)
class TextDelta:
    text: str
    # One entry per sampled token: {"token", "logprob", "bytes", "top_logprobs": [...]}
    logprobs: list[dict] | None = None
    choice: int = 0             # which of the request's `n` choices (engine/choices.py)


@dataclass(slots=True)
class ToolCall:
    """A complete function call; `arguments` is a JSON text, as OpenAI's APIs carry it."""
    id: str
    name: str
    arguments: str
    choice: int = 0


@dataclass(slots=True)
class Finished:
    finish_reason: str          # "stop" | "length" | "tool_calls"
    usage: Usage = field(default_factory=Usage)
    choice: int = 0


@dataclass(slots=True)
class Embedded:
    data: list[list[float]]
    usage: Usage = field(default_factory=Usage)


@dataclass(slots=True)
class Failed:
    code: str
    message: str
    status: int = 500


@dataclass(slots=True)
class KeepAlive:
    """Nothing new for a while (a long prompt being read): writers send their API's heartbeat,
    so that clients with a first-byte or idle timeout keep waiting."""


Output = TextDelta | ToolCall | Finished | Embedded | Failed | KeepAlive


@dataclass
class Collected:
    """A whole answer, for the non-streamed form of each API."""
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    logprobs: list[dict] | None = None
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    embeddings: list[list[float]] | None = None
    failure: Failed | None = None
    # choices 1..n-1 of a request with `n` > 1 (this object is choice 0); usage is the total
    others: list["Collected"] = field(default_factory=list)
    _parts: list[str] = field(default_factory=list, repr=False)

    @property
    def choices(self) -> list["Collected"]:
        return [self, *self.others]

    def add(self, out: Output) -> None:
        index = getattr(out, "choice", 0)
        if index:
            while len(self.others) < index:
                self.others.append(Collected())
            self.others[index - 1]._add(out)
            if isinstance(out, Finished):
                self.usage = out.usage   # the last to finish carries the total
            return
        self._add(out)

    def _add(self, out: Output) -> None:
        if isinstance(out, TextDelta):
            self._parts.append(out.text)
            if out.logprobs:
                (self.logprobs if self.logprobs is not None else self._start_logprobs()).extend(out.logprobs)
        elif isinstance(out, ToolCall):
            self.tool_calls.append(out)
        elif isinstance(out, Finished):
            self.text = "".join(self._parts)
            self.finish_reason = out.finish_reason
            if not self.others or out.usage.completion_tokens >= self.usage.completion_tokens:
                self.usage = out.usage
        elif isinstance(out, Embedded):
            self.embeddings, self.usage = out.data, out.usage
        elif isinstance(out, Failed):
            self.text = "".join(self._parts)
            self.failure = out

    def _start_logprobs(self) -> list[dict]:
        self.logprobs = []
        return self.logprobs


def status_for_code(code: str | None) -> int:
    """HTTP status of a generation that failed with this code: "try again" codes are 503."""
    if code in ("runner_crashed", "runner_unresponsive", "model_unloaded", "kv_full",
                "queue_timeout", "load_refused"):
        return 503
    if code in ("context_length_exceeded", "bad_request"):
        return 400
    if code == "remote_error":
        return 502
    return 500
