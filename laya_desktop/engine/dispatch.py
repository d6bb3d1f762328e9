"""Starting a generation on the routed model, falling back along the rule's list.

A candidate is skipped for the next one when it cannot serve before anything reached the client:
queue full or timed out, load refused or failed, runner crashed, remote error. Only then does the
response start, so its headers can name the model that really answers.
"""
from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field

from laya_desktop.config.sampling import LLAMA_ONLY_KNOBS
from laya_desktop.engine import errors
from laya_desktop.engine.apis.responses_input import previous_not_found
from laya_desktop.engine.calls import Call
from laya_desktop.engine.choices import merged_choices
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.local_outputs import local_outputs
from laya_desktop.engine.model_manager import LoadRefused, ModelManager, ServedModel
from laya_desktop.engine.model_queue import QueueFull, QueueTimeout
from laya_desktop.engine.remote import (RemoteError, RemoteStream, TranslatedStream, open_remote,
                                        speaks_natively)
from laya_desktop.engine.runner_handle import RunnerError, RunnerHandle
from laya_desktop.runners.schema_limits import SchemaTooLarge, check_gbnf, check_schema

# Errors that a runner reports at once and that no other model would answer differently.
CLIENT_ERRORS = {"context_length_exceeded": 400, "bad_request": 400, "schema_too_large": 400}


@dataclass
class Attempt:
    model: str
    error: ApiError


@dataclass
class LocalGeneration:
    served: ServedModel
    handle: RunnerHandle
    req_id: str
    queue: asyncio.Queue
    first: dict
    started: float
    first_event_at: float
    wait_s: float = 0.0          # queue wait and model load, not the engine's own work
    sent_at: float = 0.0
    done_at: float | None = None
    attempts: list[Attempt] = field(default_factory=list)
    finished: bool = False
    prompt_tokens: int | None = None   # known once the runner accepted the prompt
    passthrough = False

    def outputs(self, call: Call):
        return local_outputs(self.events(), call)

    async def events(self):
        event = self.first
        while True:
            if event.get("event") == "queued":
                event = await self.queue.get()
                continue
            if event.get("event") in ("done", "error", "embeddings"):
                self.done_at = time.monotonic()
                self.finished = True
                yield event
                return
            yield event
            event = await self.queue.get()

    def engine_overhead_ms(self, request_started: float, ended: float) -> float | None:
        """Time the engine itself spent on the request: before the runner got it and after it
        finished (parsing, routing, admission bookkeeping, formatting the answer)."""
        if self.done_at is None:
            return None
        before = self.sent_at - request_started - self.wait_s
        return round((before + ended - self.done_at) * 1000, 3)

    async def close(self) -> None:
        try:
            await self.handle.close_stream(self.req_id, cancel=not self.finished)
        finally:
            self.served.queue.release()
            self.served.touch()


def check_local(call: Call, served: ServedModel) -> None:
    """What a local model cannot take is refused by name (400), never dropped."""
    if call.remote_only:
        raise errors.bad_request(f"'{call.remote_only[0]}' is not supported by the local model "
                                 f"'{served.name}' (text only)", "unsupported_content")
    messages = call.command.get("messages") or [] if call.api == "chat" else []
    if len(messages) >= 2 and messages[-1]["role"] == messages[-2]["role"] == "assistant":
        # as llama-server refuses it: it continues a final assistant message, and of two there
        # is no telling which a client meant (a template here would answer after both). Chat
        # only: Anthropic merges consecutive turns of one role, and Responses' items are turns.
        raise errors.bad_request(f"'{call.field('messages')}' ends with two assistant messages; "
                                 f"end it with one, or with a user or tool message",
                                 "invalid_messages")
    params = call.command.get("params", {})
    forced = call.parses_tools and call.tool_choice not in ("auto", "none")
    grammar_field = call.field("tool_choice") if forced else (
        "json_schema" if call.body.get("json_schema") is not None else call.field("response_format"))
    n = choices_asked(call)
    if n > served.config.effective_parallel:
        raise errors.bad_request(f"'n' is {n}, more than the {served.config.effective_parallel} "
                                 f"sequences model '{served.name}' serves at once (its 'parallel')",
                                 "unsupported_n")
    if served.config.backend == "mlx":
        if "grammar" in params:
            raise errors.bad_request(f"'grammar' (GBNF) needs llama.cpp's grammar sampler, which "
                                     f"MLX models such as '{served.name}' do not have",
                                     "unsupported_parameter")
        if params.get("cache_prompt") is False:
            raise errors.bad_request(f"'cache_prompt': false is not supported on MLX models such "
                                     f"as '{served.name}' (their prompt reuse is fixed)",
                                     "unsupported_parameter")
        if "json_schema" in params:
            name = grammar_field
            raise errors.bad_request(f"'{name}' needs grammar-constrained decoding, which MLX "
                                     f"models such as '{served.name}' do not have",
                                     "unsupported_parameter")
        if params.get("logprobs"):
            raise errors.bad_request(f"'{call.field('logprobs')}' is not supported on MLX models "
                                     f"such as '{served.name}'", "unsupported_parameter")
        dry = next((k for k in LLAMA_ONLY_KNOBS if k in params), None)
        if dry:
            raise errors.bad_request(f"'{dry}' is not supported on MLX models such as "
                                     f"'{served.name}' (llama.cpp only)", "unsupported_parameter")
    if params.get("json_schema") is not None:
        check_grammar_size(params["json_schema"], grammar_field)
    if params.get("grammar") is not None:
        try:
            check_gbnf(params["grammar"])
        except SchemaTooLarge as exc:
            raise errors.bad_request(f"'grammar' is too large for grammar-constrained decoding: "
                                     f"{exc}", exc.code) from None
    for check in call.options.get("model_checks", ()):   # an API's own terms (apis/ollama_terms.py)
        check(served.config)
    embedding = served.config.embedding
    wants_embedding = call.command.get("kind") == "embedding"   # /v1/embeddings, /api/embed
    if embedding and not wants_embedding:
        raise errors.bad_request(f"model '{served.name}' serves embeddings only (/v1/embeddings)",
                                 "model_not_supported")
    if not embedding and wants_embedding:
        raise errors.bad_request(f"model '{served.name}' does not serve embeddings (mark a GGUF "
                                 "model with 'embedding: true')", "model_not_supported")


def choices_asked(call: Call) -> int:
    """`n` of a chat or completions request (the other APIs have no such field)."""
    return (call.body.get("n") or 1) if call.api in ("chat", "completions") else 1


def check_grammar_size(schema, field_name: str) -> None:
    """A schema past schema_limits never reaches a runner: its grammar could crash llama.cpp's
    parser or stall every stream on the runner (the limits say by how much)."""
    try:
        check_schema(schema)
    except SchemaTooLarge as exc:
        raise errors.bad_request(f"'{field_name}': the JSON schema is too large for grammar-"
                                 f"constrained decoding: {exc}", exc.code) from None


def for_model(command: dict, model, rule_sampling: dict | None = None) -> dict:
    """The command as this model runs it: its `sampling` defaults, under the routing rule's,
    under the request's own values; and max_tokens within its `max_output_tokens`, when it has
    one."""
    asked = command.get("params", {})
    params = {**getattr(model, "sampling", {}), **(rule_sampling or {}), **asked}
    cap = getattr(model, "max_output_tokens", None)
    if cap is not None and (asked.get("max_tokens") is None or asked["max_tokens"] > cap):
        params["max_tokens"] = cap
    return command if params == asked else {**command, "params": params}


async def start_local(manager: ModelManager, served: ServedModel, command: dict,
                      timeout_s: float, early: bool = False,
                      rule_sampling: dict | None = None) -> LocalGeneration:
    """A generation on a local model once its runner took the request: at its first token, or
    with `early` (a stream) as soon as the runner has accepted the prompt, since a long prompt
    may take minutes to read and the client should hear from us before that."""
    started = time.monotonic()
    while True:
        await served.queue.acquire(max(0.0, timeout_s - (time.monotonic() - started)))
        current = manager.get(served.name)
        if current is served:
            break
        # A config change replaced this model while we waited in its old queue: queue again on
        # the new one (its old runner is gone and must not be started again).
        served.queue.release()
        if current is None or not current.is_local:
            raise RunnerError(f"model '{served.name}' was removed by a config change",
                              "model_unloaded")
        served = current
    handle = req_id = None
    try:
        served.touch()
        handle = await manager.ensure_ready(served)
        wait_s = time.monotonic() - started
        req_id = uuid.uuid4().hex
        sent_at = time.monotonic()
        queue = await handle.open_stream(req_id, for_model(command, served.config, rule_sampling))
        first = await queue.get()
        prompt_tokens = first.get("prompt_tokens") if first.get("event") == "queued" else None
        if prompt_tokens is not None and not early:
            first = await queue.get()
    except BaseException:
        served.queue.release()
        if handle is not None and req_id is not None:
            # cancelled while waiting for the first event: the runner must not go on generating
            await handle.close_stream(req_id, cancel=True)
        raise
    gen = LocalGeneration(served, handle, req_id, queue, first, started, time.monotonic(),
                          wait_s=wait_s, sent_at=sent_at, prompt_tokens=prompt_tokens)
    if first.get("event") == "error":
        gen.finished = True
        await gen.close()
        code = first.get("code") or "internal"
        message = first.get("message") or "generation failed"
        if code == "context_length_exceeded":
            raise errors.context_exceeded(message, first.get("n_prompt_tokens"), first.get("n_ctx"))
        if code in CLIENT_ERRORS:
            raise ApiError(CLIENT_ERRORS[code], message, "invalid_request_error", code)
        raise RunnerError(message, code)
    served.requests_total += 1
    return gen


async def start_generation(manager: ModelManager, candidates: list[str], call: Call,
                           timeout_s: float, remote_client, client_headers=None,
                           rule_sampling: dict | None = None):
    """The first candidate's generation that starts; raises the last candidate's ApiError if none
    could serve. Client errors (400) are raised at once, since no other model would answer them
    otherwise, except a prompt longer than the model's context: a fallback may hold it."""
    attempts: list[Attempt] = []
    for name in candidates:
        served = manager.get(name)
        if served is None:
            attempts.append(Attempt(name, errors.model_not_found(name)))
            continue
        try:
            if call.options.get("unresolved_previous_response_id") and not (
                    not served.is_local and speaks_natively(served.config, call.api)):
                # only a Responses upstream can know a response this engine never stored
                raise previous_not_found(call.options["unresolved_previous_response_id"])
            if served.is_local:
                check_local(call, served)
                gen = await start_local(manager, served, call.command, timeout_s, early=call.stream,
                                        rule_sampling=rule_sampling)
                n = choices_asked(call)
                if n > 1:
                    gen = await fan_out(manager, gen, call.command, n, timeout_s, rule_sampling)
            else:   # an openai remote takes `n` as sent; remote_anthropic refuses n > 1
                gen = await open_remote(remote_client, served, call, client_headers)
            gen.attempts = attempts
            return gen
        except QueueFull:
            error = errors.queue_full(name)
        except QueueTimeout:
            error = errors.queue_timeout(name, int(timeout_s * 1000))
        except LoadRefused as exc:
            error = errors.unavailable(str(exc), "load_refused", retry_after=5)
        except RunnerError as exc:
            error = errors.unavailable(str(exc), exc.code, retry_after=1)
        except RemoteError as exc:
            error = exc.api_error
        except ApiError as exc:
            # A prompt too long for this model may fit the next one's context; any other client
            # error would be the same everywhere.
            if exc.code != "context_length_exceeded" or name == candidates[-1]:
                raise
            error = exc
        attempts.append(Attempt(name, error))
    last = attempts[-1].error if attempts else errors.model_not_found(None)
    last.extra.setdefault("attempts", [{"model": a.model, "code": a.error.code,
                                        "status": a.error.status, "message": a.error.message}
                                       for a in attempts])
    raise last


async def fan_out(manager: ModelManager, first: LocalGeneration, command: dict, n: int,
                  timeout_s: float, rule_sampling: dict | None) -> "Choices":
    """`n` choices: the first generation and n-1 more of the same command on the same model, each
    its own sequence (each reads the prompt: the runner's prompt cache may serve the repeats).
    A seed given is offset per choice, or the n choices would be the same text."""
    gens = [first]
    try:
        for i in range(1, n):
            params = command.get("params", {})
            cmd = command if params.get("seed") is None else {
                **command, "params": {**params, "seed": params["seed"] + i}}
            gens.append(await start_local(manager, first.served, cmd, timeout_s, early=True,
                                          rule_sampling=rule_sampling))
    except BaseException:
        for gen in gens:
            await gen.close()
        raise
    return Choices(gens)


class Choices:
    """n local generations answering one request as its choices 0..n-1 (engine/choices.py merges
    their outputs)."""
    passthrough = False

    def __init__(self, gens: list[LocalGeneration]):
        self.gens = gens
        first = gens[0]
        self.served, self.started, self.first_event_at = first.served, first.started, first.first_event_at
        self.prompt_tokens, self.attempts = first.prompt_tokens, first.attempts

    def outputs(self, call: Call):
        return merged_choices([g.outputs(call) for g in self.gens])

    def engine_overhead_ms(self, request_started: float, ended: float) -> float | None:
        return self.gens[0].engine_overhead_ms(request_started, ended)

    async def close(self) -> None:
        for gen in self.gens:
            await gen.close()


__all__ = ["start_generation", "LocalGeneration", "RemoteStream", "TranslatedStream", "Attempt"]
