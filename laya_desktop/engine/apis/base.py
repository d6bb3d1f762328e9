"""What every API adapter provides to the shared serving path (engine/serving.py).

An adapter is a plain object with:
- `name`: the request log's `api` ("chat", "completions", "responses", "messages", "embeddings");
- `parse(body, headers, engine) -> Call`: check the body (a 400 `ApiError` naming the field) and build
  the call: the chat-completions view the rules see, the runner command, the stream flag;
- `error_response(error, headers) -> Response`: an `ApiError` in this API's own error shape;
- `stream(call, outputs, meta)`: async iterator of the SSE bytes for a stream of `Output`s; it
  ends with the API's own terminal events, also when the outputs end in `Failed`;
- `collect(call, result, meta) -> dict`: the non-streamed answer from a `Collected` (never
  called with a failure: serving answers those through `error_response`);
- `stream_failure(failed) -> bytes`: what ends a stream that breaks off, for a remote's stream
  relayed as it came.
A stream's outputs may hold `KeepAlive`s while a long prompt is read: each writer answers one
with its API's heartbeat (an SSE comment, Anthropic's `ping`, Responses' `response.in_progress`).
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Protocol

from starlette.datastructures import Headers
from starlette.responses import Response

from laya_desktop.engine.calls import Call
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.outputs import Collected, Failed, Output


@dataclass
class Meta:
    """Facts about the answer that every writer puts in it."""
    model: str                      # the model that answers
    engine: Any = None              # the Engine (the Responses store lives there)
    created: int = field(default_factory=lambda: int(time.time()))
    hex_id: str = field(default_factory=lambda: uuid.uuid4().hex[:24])
    prompt_tokens: int | None = None   # a local stream's, once the runner accepted the prompt
    started: float = field(default_factory=time.monotonic)   # the request's arrival
    first_at: float | None = None      # its first output (serving notes it)

    def timings(self, usage) -> dict:
        """llama-server's `timings`, from the engine's clock: the prompt's time includes any
        wait for a slot or a load, as the client saw it."""
        ended = time.monotonic()
        first = self.first_at or ended
        prompt_ms, predicted_ms = (first - self.started) * 1000, (ended - first) * 1000
        prompt_n = max(usage.prompt_tokens - usage.cached_tokens, 0)
        return {"cache_n": usage.cached_tokens, "prompt_n": prompt_n,
                "prompt_ms": round(prompt_ms, 3),
                "prompt_per_token_ms": round(prompt_ms / prompt_n, 3) if prompt_n else 0.0,
                "prompt_per_second": round(prompt_n * 1000 / prompt_ms, 3) if prompt_ms else 0.0,
                "predicted_n": usage.completion_tokens, "predicted_ms": round(predicted_ms, 3),
                "predicted_per_token_ms": round(predicted_ms / usage.completion_tokens, 3)
                if usage.completion_tokens else 0.0,
                "predicted_per_second": round(usage.completion_tokens * 1000 / predicted_ms, 3)
                if predicted_ms else 0.0}


class Api(Protocol):
    name: str

    def parse(self, body: Any, headers: Headers, engine: Any = None) -> Call: ...

    def error_response(self, error: ApiError, headers: dict[str, str] | None = None) -> Response: ...

    def stream(self, call: Call, outputs: AsyncIterator[Output], meta: Meta) -> AsyncIterator[bytes]: ...

    def collect(self, call: Call, result: Collected, meta: Meta) -> dict: ...

    def stream_failure(self, failed: Failed) -> bytes: ...
