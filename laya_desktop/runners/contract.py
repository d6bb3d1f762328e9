"""The runner contract: what every backend (llama.cpp, MLX) promises runner_main and the engine.

runner_main drives one backend from one thread. Each call returns the events it produced:

- `submit(cmd)` checks a generate command (`accept` below, the same checks and messages for every
  backend). A refused command gives `[error]`, `count_only` gives `[done("count")]`, any other
  `[queued]`; the request then waits for a slot. A backend that prepares a request off its loop
  (llama.cpp building a JSON-schema grammar) may answer `[]` and send `queued` or `error` from a
  later `step()`; it then has `set_wake(callback)`, called when such work is done.
- `step()` does a bounded piece of work (one decode step, or one prompt chunk), so that the loop
  reads cancels in between; `has_work()` says whether a step would do anything.
- `cancel(id)` ends a queued or running request with `[done("cancelled")]` (its usage so far)
  and nothing more follows for that id; an id it does not know gives `[]`.
- `info()` once after loading (the `ready` event), `stats()` on request and while busy, `close()`.

One request's events: `queued`, `token`* (text deltas), then exactly one `done` or `error`.
finish_reason: "stop" (end of sequence or a stop string; the stop string itself is never sent),
"length" (max_tokens, or the sequence reached n_ctx), "cancelled", "count". usage counts the
prompt, the completion tokens (an end-of-sequence token is not one) and the prompt tokens whose KV
was reused (`cached_tokens`), with where it came from when there were any (`cached_from`: "slot",
the sequence still held it; "ram" or "disk", the prompt cache, runners/prompt_cache.py).
Error codes: bad_request (id, params, prompt, or a feature this backend lacks, named first in the
message), context_length_exceeded (the prompt is longer than n_ctx), kv_full, internal (the
backend failed mid-generation: its requests end, the runner goes on).
Defaults: sampling from config.sampling through protocol.parse_params; no max_tokens means until
n_ctx; stop strings are the request's plus the chat template's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Protocol

from laya_desktop.runners import protocol as P

KINDS = ("chat", "completion")   # what a text backend generates from ("embedding": its own backend)


class RunnerBackend(Protocol):
    """What runner_main drives; single-threaded, called from the runner's main loop."""

    def info(self) -> dict: ...
    def submit(self, cmd: dict) -> list[dict]: ...
    def cancel(self, req_id: str) -> list[dict]: ...
    def has_work(self) -> bool: ...
    def step(self) -> list[dict]: ...
    def stats(self) -> dict: ...
    def close(self) -> None: ...


@dataclass
class Accepted:
    """A generate command that passed `accept`: the backend queues it."""
    id: str
    prompt: list[int]
    stops: list[str]            # the chat template's, then the request's
    params: P.SamplingParams


def accept(cmd: dict, *, live_ids: Collection[str], n_ctx: int,
           build_prompt: Callable[[dict], tuple[list[int], list[str]]],
           refuse: Callable[[dict], str | None]) -> Accepted | list[dict]:
    """Check a generate command in the contract's order; the events to answer with when it is
    refused or only counted. `build_prompt` gives (tokens, template stop strings) or raises
    BadRequest; `refuse` names what this backend cannot do for the command, or None."""
    req_id = cmd.get("id")
    if not isinstance(req_id, str) or req_id in live_ids:
        return [P.error(req_id, "bad_request", "generate needs a new string id")]
    try:
        refused = refuse(cmd)
        if refused:
            raise P.BadRequest(refused)
        if cmd.get("kind") not in KINDS:
            raise P.BadRequest(f"unknown kind {cmd.get('kind')!r} (valid: {', '.join(KINDS)})")
        params = P.parse_params(cmd.get("params"))
        prompt, stops = build_prompt(cmd)
        if not prompt:
            raise P.BadRequest("the prompt is empty")
    except P.BadRequest as exc:
        return [P.error(req_id, "bad_request", str(exc))]
    if cmd.get("count_only"):
        return [P.done(req_id, "count", len(prompt), 0)]
    if len(prompt) > n_ctx:
        return [{**P.error(req_id, "context_length_exceeded",
                           f"the prompt has {len(prompt)} tokens, more than this model's context "
                           f"of {n_ctx} tokens per sequence"),
                 "n_prompt_tokens": len(prompt), "n_ctx": n_ctx}]
    return Accepted(req_id, prompt, list(stops) + params.stop, params)
