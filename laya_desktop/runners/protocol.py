"""JSON-lines messages between the engine and a runner process (see docs/ARCHITECTURE.md; what a
backend promises about them is runners/contract.py).

Commands (engine -> runner, on stdin): generate, cancel, stats, shutdown.
Events (runner -> engine, on the protocol fd): ready, load_failed, token, done, embeddings, error,
stats, alive (a heartbeat from its own thread, so the engine can tell a hung runner from one busy
with a long step). A cancelled request ends with a `done` event whose finish_reason is "cancelled" (the engine
has usually stopped listening by then; it tells a waiting caller that the slot is free); a
`count_only` generate ends at once with finish_reason "count".
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from laya_desktop.config.message_text import message_text as content_text
from laya_desktop.config.sampling import KnobError, knob_default, read_knobs


class BadRequest(ValueError):
    """A generate command the runner cannot serve as given (engine answers 400)."""


class ContextLengthExceeded(ValueError):
    """A prompt longer than n_ctx tokens (engine answers 400 context_length_exceeded)."""


def encode(message: dict) -> bytes:
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def decode(line: bytes | str) -> dict:
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message must be a JSON object")
    return message


# --- events --------------------------------------------------------------------------------------

def ready(info: dict) -> dict:
    return {"event": "ready", "info": info}


def load_failed(message: str) -> dict:
    return {"event": "load_failed", "message": message}


def queued(req_id: str, prompt_tokens: int) -> dict:
    """The request was accepted (its prompt fits) and waits for or holds a slot: the engine may
    start answering the client before the first token, which a long prompt may delay by minutes."""
    return {"event": "queued", "id": req_id, "prompt_tokens": prompt_tokens}


def token(req_id: str, text: str, logprobs: list[dict] | None = None) -> dict:
    event = {"event": "token", "id": req_id, "text": text}
    if logprobs is not None:
        event["logprobs"] = logprobs
    return event


def embeddings(req_id: str, data: list[list[float]], prompt_tokens: int) -> dict:
    return {"event": "embeddings", "id": req_id, "data": data,
            "usage": {"prompt_tokens": prompt_tokens}}


def done(req_id: str, finish_reason: str, prompt_tokens: int, completion_tokens: int,
         cached_tokens: int = 0, cached_from: str | None = None) -> dict:
    """`cached_from`: where the cached tokens' KV came from, "slot" (the sequence still held
    it), "ram" or "disk" (the prompt cache); absent when there were none."""
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "cached_tokens": cached_tokens}
    if cached_from is not None:
        usage["cached_from"] = cached_from
    return {"event": "done", "id": req_id, "finish_reason": finish_reason, "usage": usage}


def error(req_id: str | None, code: str, message: str) -> dict:
    return {"event": "error", "id": req_id, "code": code, "message": message}


def alive() -> dict:
    return {"event": "alive"}


def stats(values: dict) -> dict:
    return {"event": "stats", **values}


# --- generate parameters -------------------------------------------------------------------------

@dataclass
class SamplingParams:
    """A generate command's `params`, checked. The knobs' defaults and ranges are config.sampling's."""
    max_tokens: int | None = None          # None: until n_ctx
    temperature: float = knob_default("temperature")
    top_p: float = knob_default("top_p")
    top_k: int = knob_default("top_k")
    min_p: float = knob_default("min_p")
    stop: list[str] = field(default_factory=list)
    seed: int | None = None
    frequency_penalty: float = knob_default("frequency_penalty")
    presence_penalty: float = knob_default("presence_penalty")
    repeat_penalty: float = knob_default("repeat_penalty")
    repeat_last_n: int = knob_default("repeat_last_n")
    # DRY ("don't repeat yourself") penalises a token that would extend a sequence already seen,
    # more the longer it is: it ends loops that a per-token repeat penalty lets through.
    dry_multiplier: float = knob_default("dry_multiplier")
    dry_base: float = knob_default("dry_base")
    dry_allowed_length: int = knob_default("dry_allowed_length")
    dry_penalty_last_n: int = knob_default("dry_penalty_last_n")
    logit_bias: dict[int, float] = field(default_factory=dict)
    logprobs: bool = False
    top_logprobs: int = 0
    json_schema: dict | None = None        # the output must be JSON valid against it
    grammar: str | None = None             # or follow this GBNF grammar (llama-server's `grammar`)
    cache_prompt: bool = True              # False: no cached prefix is reused for this prompt

    @property
    def constrained(self) -> bool:
        """Sampled through a grammar (built on the grammar worker first)."""
        return self.json_schema is not None or self.grammar is not None


MAX_TOP_LOGPROBS = 20


def _integer(params: dict, key: str, default: int | None, lo: int) -> int | None:
    value = params.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{key} must be an integer, got {value!r}")
    if value < lo:
        raise BadRequest(f"{key} must be at least {lo}, got {value!r}")
    return value


def parse_params(params: dict | None) -> SamplingParams:
    params = params or {}
    if not isinstance(params, dict):
        raise BadRequest("params must be an object")
    stop = params.get("stop")
    if stop is None:
        stop = []
    elif isinstance(stop, str):
        stop = [stop]
    elif not (isinstance(stop, list) and all(isinstance(s, str) for s in stop)):
        raise BadRequest("stop must be a string or a list of strings")
    bias_raw = params.get("logit_bias") or {}
    if not isinstance(bias_raw, dict):
        raise BadRequest("logit_bias must be an object of token id -> bias")
    logit_bias = {}
    for key, value in bias_raw.items():
        try:
            token_id = int(key)
        except (TypeError, ValueError):
            raise BadRequest(f"logit_bias key {key!r} is not a token id") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadRequest(f"logit_bias[{key}] must be a number")
        logit_bias[token_id] = max(-100.0, min(100.0, float(value)))
    logprobs = params.get("logprobs") or False
    if not isinstance(logprobs, bool):
        raise BadRequest(f"logprobs must be true or false, got {logprobs!r}")
    top_logprobs = _integer(params, "top_logprobs", 0, 0)
    if top_logprobs > MAX_TOP_LOGPROBS:
        raise BadRequest(f"top_logprobs must be between 0 and {MAX_TOP_LOGPROBS}, got {top_logprobs}")
    if top_logprobs and not logprobs:
        raise BadRequest("top_logprobs needs logprobs: true")
    schema = params.get("json_schema")
    if schema is not None and not isinstance(schema, dict):
        raise BadRequest("response_format: the JSON schema must be an object")
    grammar = params.get("grammar")
    if grammar is not None and not (isinstance(grammar, str) and grammar.strip()):
        raise BadRequest("grammar must be a non-empty string of GBNF")
    if grammar is not None and schema is not None:
        raise BadRequest("grammar and a JSON schema cannot be given together")
    try:
        knobs = read_knobs(params)
    except KnobError as exc:
        raise BadRequest(str(exc)) from None
    return SamplingParams(
        max_tokens=_integer(params, "max_tokens", None, 1),
        stop=[s for s in stop if s],
        seed=_integer(params, "seed", None, -(2 ** 63)),
        logit_bias=logit_bias,
        logprobs=logprobs,
        top_logprobs=int(top_logprobs),
        json_schema=schema,
        grammar=grammar,
        cache_prompt=params.get("cache_prompt", True) is not False,
        **knobs,
    )


def message_text(content: Any) -> str:
    """The text of a chat message's content (config.message_text); None is empty."""
    if content is not None and not isinstance(content, (str, list)):
        raise BadRequest("message content must be a string or a list of parts")
    return content_text(content)

