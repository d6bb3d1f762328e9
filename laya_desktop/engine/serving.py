"""The one generation path every API shares: body -> Call -> route -> model -> outputs -> writer.

An API adapter (engine/apis/) parses its body into a `Call` and writes the shared outputs in its
own format; everything between — reading the body, routing, the `X-Laya-*` headers, fallbacks,
queues and loads, a client leaving, the request log — happens here once.
"""
from __future__ import annotations

import asyncio
import json
import math
import time
from typing import AsyncIterator

import anyio
import httpx
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from laya_desktop.engine import errors, field_limits
from laya_desktop.engine.apis.base import Api, Meta
from laya_desktop.engine.calls import Call
from laya_desktop.engine.dispatch import LocalGeneration, check_local, start_generation, start_local
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.keepalive import with_keepalive
from laya_desktop.engine.model_manager import LoadRefused
from laya_desktop.engine.model_queue import QueueFull, QueueTimeout
from laya_desktop.engine.outputs import Collected, Embedded, Failed, Finished, KeepAlive, Output
from laya_desktop.engine.remote import open_remote
from laya_desktop.engine.replica_health import is_down_error
from laya_desktop.engine.runner_handle import RunnerError
from laya_desktop.engine.sse import DisconnectAwareStreamingResponse
from laya_desktop.routing.session_affinity import (response_id_in, response_key, session_key,
                                                   short_hash, with_affinity)
from laya_desktop.routing.target_book import latency_sample
from laya_desktop.routing.why import tried_before, why_routed

MAX_BODY_BYTES = 32 * 1024 * 1024   # server.max_body_mb's default
# Deeper JSON than any real request: the adapters, the runner pipe and the request log walk bodies
# recursively, and Python's parser itself overflows its stack near 1,000 levels (RecursionError).
MAX_JSON_DEPTH = 128


def max_body_bytes(request: Request) -> int:
    return int(request.app.state.engine.config.server.max_body_mb * 1024 * 1024)


def _too_large(limit: int) -> ApiError:
    return ApiError(413, f"request body over {limit} bytes (server.max_body_mb)",
                    "invalid_request_error", "request_too_large")


def _not_json(why: str) -> ApiError:
    return errors.bad_request(f"the request body is not valid JSON: {why}", "invalid_json")


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON value")  # Python's parser takes NaN and Infinity


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses to inf: NaN's way past the constant check
        raise ValueError(f"the number {text[:30]} is out of range")
    return value


def _tree_fault(value, strings: bool) -> str | None:
    """What makes a parsed body unusable, or None: nesting deeper than MAX_JSON_DEPTH, or (with
    `strings`) a lone UTF-16 surrogate from a `\\ud800` escape, which is no Unicode text and kills
    whatever later encodes it as UTF-8 (the runner pipe). Iterative: no recursion to overflow."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if strings and not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return "a string holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape)"
            continue
        if isinstance(item, dict):
            item = [*item.keys(), *item.values()]
        elif not isinstance(item, list):
            continue
        if depth > MAX_JSON_DEPTH:
            return f"nested deeper than {MAX_JSON_DEPTH} levels"
        stack.extend((child, depth + 1) for child in item if isinstance(child, (dict, list, str)))
    return None


def parse_json(raw: bytes):
    """Bytes -> JSON value, or a 400: invalid UTF-8 or JSON, NaN/Infinity, an integer too long for
    Python (over 4,300 digits: ValueError), nesting too deep (RecursionError, or over the limit),
    a lone surrogate."""
    try:
        value = json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise _not_json(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    except UnicodeDecodeError as exc:
        raise _not_json(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:  # JSONDecodeError is one
        raise _not_json(str(exc)[:200]) from None
    # only an escape can make a surrogate, and a body with few brackets cannot nest deeply: most
    # bodies need no walk at all
    strings = b"\\u" in raw or b"\\U" in raw
    if strings or raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH:
        fault = _tree_fault(value, strings)
        if fault:
            raise _not_json(fault)
    return value


async def read_json(request: Request):
    return (await read_sized_json(request))[0]


async def read_sized_json(request: Request):
    """(the JSON value, the body's length in bytes); ClientDisconnect when the client left
    before its body was in."""
    limit = max_body_bytes(request)
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > limit:
        raise _too_large(limit)
    raw = bytearray()
    async for chunk in request.stream():  # a chunked body has no length: stop at the limit
        raw += chunk
        if len(raw) > limit:
            raise _too_large(limit)
    return parse_json(bytes(raw)), len(raw)


async def read_call(request: Request, api: Api, engine, count_only: bool = False) -> Call:
    """The body read, its free-form fields checked against their caps (engine/field_limits.py)
    for every API alike, then parsed by the API's adapter."""
    body, size = await read_sized_json(request)
    field_limits.check_request(body, request.headers.get("x-laya-tags"), api.name)
    if count_only:
        call = api.parse_count(body, request.headers)
    else:
        # the Responses adapter reads its store on the engine (previous_response_id, item_reference)
        call = api.parse(body, request.headers, engine)
    call.options["body_bytes"] = size   # what a stored response is charged (response_store.py)
    return call


class RequestRecord:
    """What the request log keeps of one request, filled in as it goes."""

    def __init__(self, path: str, api: str):
        self.fields = {"path": path, "api": api, "rule": None, "model": None, "fallback_from": None,
                       "status": None, "prompt_tokens": None, "completion_tokens": None,
                       "cached_tokens": None, "ttft_ms": None, "duration_ms": None}
        self.started = time.monotonic()
        self.generation = None
        self.ticket = None   # the routed model's hold on its in-flight count (TargetBook)
        # (router, path, body, header tags, decision): the log's "why" is worked out in finish(),
        # once generation is over: replaying the rules costs tens of µs that TTFT need not carry
        self.route_inputs: tuple | None = None
        self.candidates: list[str] | None = None
        self.tried: list[dict] | None = None
        self.failures: list[tuple] = []    # (model, code, status, message) of candidates that failed
        self.trials: list[str] = []        # ejected models this request holds the trial of
        self.session: tuple | None = None  # (rule, session key, ttl) when affinity is on

    def note_candidates(self, order: list[str]) -> None:
        self.candidates = list(order)

    def note_tried(self, attempts) -> None:
        """The candidates that failed before one served (or all of them), for the log's "why"."""
        if attempts:
            self.tried = tried_before(attempts)
            self.failures = [(a["model"], a.get("code"), a.get("status"), a.get("message"))
                             if isinstance(a, dict) else
                             (a.model, a.error.code, a.error.status, a.error.message)
                             for a in attempts]

    def _why(self) -> dict | None:
        if self.route_inputs is None:
            return None
        why = why_routed(*self.route_inputs)
        self.route_inputs = None
        if self.candidates is not None:
            why["candidates"] = self.candidates
        if self.tried:
            why["tried"] = self.tried
        return why

    def _judge_health(self, health, status: int) -> None:
        """What this request says about each remote it tried: down, up, or nothing (the client
        left); the trials it held but never used are freed for the next request."""
        judged = set()
        for model, code, code_status, message in self.failures:
            if is_down_error(code, code_status):
                health.failed(model, message or code, token=self)
                judged.add(model)
        served = self.fields["model"]
        if served is not None and served not in judged and status != 499:
            if status == 502:   # the answer broke off (_relay) or the remote failed mid-way
                health.failed(served, f"answer broke off ({status})", token=self)
            else:
                health.succeeded(served, token=self)
            judged.add(served)
        for model in self.trials:
            if model not in judged:
                health.release(model, self)

    def note_answer_tail(self, engine, tail: bytes) -> None:
        """A Responses answer relayed from an upstream that keeps the chain: its next turn will
        name this answer's id as previous_response_id, and should find the same target."""
        if self.session is None or self.fields["api"] != "responses" or not tail:
            return
        response_id = response_id_in(tail)
        if response_id is not None and self.fields["model"] is not None:
            rule, _key, ttl = self.session
            engine.affinity.put(rule, response_key(response_id), self.fields["model"], ttl)

    def note_usage(self, usage) -> None:
        self.fields["prompt_tokens"] = usage.prompt_tokens
        self.fields["completion_tokens"] = usage.completion_tokens
        self.fields["cached_tokens"] = usage.cached_tokens
        self.fields["cached_from"] = usage.cached_from

    def finish(self, engine, status: int) -> None:
        ended = time.monotonic()
        self.fields["status"] = status
        self.fields["duration_ms"] = round((ended - self.started) * 1000, 1)
        if isinstance(self.generation, LocalGeneration):
            self.fields["engine_ms"] = self.generation.engine_overhead_ms(self.started, ended)
        if self.ticket is not None:
            f = self.fields
            self.ticket.end(*latency_sample(status, f["ttft_ms"], f["duration_ms"],
                                            f["completion_tokens"]),
                            hold_ms=f["duration_ms"] if status == 200 else None)
        self._judge_health(engine.health, status)
        why = self._why()
        if why is not None:
            self.fields["why"] = why
        engine.record_request(self.fields)


async def embed_off_loop(router, path: str, body: dict, header_tags: str | None) -> None:
    """When the decision will embed the prompt for a semantic rule (milliseconds), do that in a
    worker thread first, so the event loop goes on streaming other answers; the decision then
    finds the embedding cached. X-Laya-Route-Us therefore times the decision without it."""
    text = router.text_to_embed(path, body, header_tags)
    if text is not None:
        await asyncio.to_thread(router.semantic.embed, text)


class Routed:
    """A call and where the rules sent it, with the headers every routed answer carries."""

    def __init__(self, engine, call: Call, request: Request, record: RequestRecord):
        router, header_tags = engine.router, request.headers.get("x-laya-tags")
        started = time.perf_counter_ns()
        decision = router.decide_body(call.path, call.chat, header_tags)
        route_us = (time.perf_counter_ns() - started) / 1000
        record.route_inputs = (router, call.path, call.chat, header_tags, decision)
        if decision is None:
            raise errors.model_not_found(call.chat.get("model"))
        self.decision = decision
        self.rule = decision.rule if decision.rule is not None else "direct"
        record.fields["rule"] = self.rule
        self.headers = {"X-Laya-Route": self.rule, "X-Laya-Route-Us": f"{route_us:.1f}"}
        self.first = decision.target
        self.skipped_first: str | None = None   # see choose()
        engine.route_inputs.record(call.path, call.chat, header_tags)

    @property
    def candidates(self) -> list[str]:
        return [self.decision.target, *self.decision.fallbacks]

    def choose(self, engine, record: RequestRecord, call: Call | None = None,
               request: Request | None = None) -> list[str]:
        """The candidates in the order this request tries them (the rule's strategy on the live
        figures, without the remotes known to be down, the conversation's own target first),
        holding the first one's in-flight count until the request ends."""
        book, pool = engine.targets, self.decision.pool
        planned = self.decision.candidates(book)
        order = engine.health.order(planned)
        # a rule's fallback serving because its targets are down is a fallback all the same
        self.skipped_first = None if order[:1] == planned[:1] else planned[0]
        if not order:
            raise errors.unavailable(f"every model of rule '{self.rule}' is down and already "
                                     "being tried again (see GET /admin/models)", "upstream_down",
                                     retry_after=1)
        if pool is not None and pool.affinity_ttl_s is not None and call is not None:
            order = self._follow_session(engine, record, call, request, order)
        self.first = order[0]
        record.note_candidates(order)
        record.trials = engine.health.claim_trials(order, record)
        record.ticket = book.begin(self.first)
        if pool is not None:
            record.fields["strategy"] = pool.strategy
            self.headers["X-Laya-Strategy"] = pool.strategy
        return order

    def _follow_session(self, engine, record: RequestRecord, call: Call, request: Request | None,
                        order: list[str]) -> list[str]:
        pool, book = self.decision.pool, engine.targets
        found = session_key(call.body, call.chat, request.headers if request is not None else {},
                            call.options.get("unresolved_previous_response_id"))
        if found is None:
            return order
        key, source, follow = found
        remembered = engine.affinity.get(self.rule, key) if follow else None
        order, chosen = with_affinity(order, remembered, engine.health.usable,
                                      lambda m: pool.has_room(m, book))
        record.fields.update(session=short_hash(key), session_from=source, affinity=chosen)
        record.session = (self.rule, key, pool.affinity_ttl_s)
        return order

    def served_by(self, name: str, record: RequestRecord, engine=None) -> None:
        self.headers["X-Laya-Model"] = name
        record.fields["model"] = name
        if record.session is not None and engine is not None:
            rule, key, ttl = record.session
            engine.affinity.put(rule, key, name, ttl)
        if record.ticket is not None:
            record.ticket.move(name)
        source = self.first if name != self.first else self._skipped_from(name)
        if source is not None:
            self.headers["X-Laya-Fallback-From"] = source
            record.fields["fallback_from"] = source

    def _skipped_from(self, name: str) -> str | None:
        """The rule's first target, when health skipped the rule's targets for a fallback."""
        skipped = self.skipped_first
        if skipped is None:
            return None
        targets = self.decision.pool.models if self.decision.pool else (self.decision.target,)
        return skipped if name not in targets else None


def endpoint(api: Api):
    async def handle(request: Request) -> Response:
        return await serve(request, api)
    handle.__name__ = f"serve_{api.name}"
    return handle


async def serve(request: Request, api: Api) -> Response:
    engine = request.app.state.engine
    path = request.scope["path"]   # what the router matched (request.url builds and parses a URL)
    record = RequestRecord(path, api.name)
    routed = None
    try:
        call = await read_call(request, api, engine)
        call.path = path
        await embed_off_loop(engine.router, call.path, call.chat, request.headers.get("x-laya-tags"))
        routed = Routed(engine, call, request, record)
        candidates = routed.choose(engine, record, call, request)
        gen = await unless_client_leaves(request, lambda: start_generation(
            engine.models, candidates, call, engine.config.scheduler.queue_timeout_ms / 1000,
            engine.remote, request.headers, routed.decision.sampling))
    except ApiError as exc:
        record.note_tried(exc.extra.get("attempts"))
        record.finish(engine, exc.status)
        return api.error_response(exc, routed.headers if routed else None)
    except ClientDisconnect:   # left before its body was in: nothing was started for it
        record.finish(engine, 499)
        return Response(status_code=499)
    except BaseException:
        if record.ticket is not None:
            record.ticket.end()   # an unexpected error: the hold must not outlive the request
        for model in record.trials:   # nor a trial of an ejected model: none would follow
            engine.health.release(model, record)
        raise
    if gen is None:  # the client went away while the request waited for a slot or a load
        record.finish(engine, 499)
        return Response(status_code=499)
    record.generation = gen
    record.note_tried(getattr(gen, "attempts", None))
    routed.served_by(gen.served.name, record, engine)
    if gen.passthrough:
        record.fields["ttft_ms"] = round((gen.first_event_at - gen.started) * 1000, 1)
        return await _relay(engine, api, gen, routed.headers, record)
    meta = Meta(model=gen.served.name, engine=engine, started=record.started,
                prompt_tokens=getattr(gen, "prompt_tokens", None))   # a remote's: None
    if call.stream:
        return DisconnectAwareStreamingResponse(
            _stream(engine, api, call, gen, meta, record), media_type="text/event-stream",
            headers={**routed.headers, "Cache-Control": "no-cache"})
    return await _collect(request, engine, api, call, gen, meta, routed.headers, record)


WATCH_AFTER_S = 0.05   # a start that takes longer than this is given up when the client leaves


async def unless_client_leaves(request: Request, start):
    """`await start()` (queue wait, model load, first event), given up as soon as the client
    disconnects, so a gone client does not keep its place in the queue. None when it left.

    Plain asyncio, not an anyio task group (whose cancel scope formats the task's repr into every
    cancel reason): a watcher task that cancels this one, started only once the start has taken
    WATCH_AFTER_S, so a remote that answers at once costs a timer, not a task."""
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    left = False
    watcher: asyncio.Future | None = None

    async def watch() -> None:
        nonlocal left
        # The body has been read: all that can still arrive is the disconnect.
        while (await request.receive())["type"] != "http.disconnect":
            pass
        left = True
        task.cancel()

    def start_watching() -> None:
        nonlocal watcher
        watcher = asyncio.ensure_future(watch())

    timer = loop.call_later(WATCH_AFTER_S, start_watching)
    try:
        return await start()
    except asyncio.CancelledError:
        if not left:
            raise
        if hasattr(task, "uncancel"):   # Python 3.11+: the cancel was ours, not the caller's
            task.uncancel()
        return None
    finally:
        timer.cancel()
        if watcher is not None:
            watcher.cancel()


async def _noted(outputs: AsyncIterator[Output], record: RequestRecord, status: list[int],
                 meta: Meta):
    """The outputs, passed on; their usage, failure and time to the first one go into the log."""
    async for out in outputs:
        if record.fields["ttft_ms"] is None and not isinstance(out, KeepAlive):
            meta.first_at = time.monotonic()
            record.fields["ttft_ms"] = round((meta.first_at - record.started) * 1000, 1)
        if isinstance(out, (Finished, Embedded)):
            record.note_usage(out.usage)
        elif isinstance(out, Failed):
            status[0] = out.status
        yield out


async def _stream(engine, api: Api, call: Call, gen, meta: Meta, record: RequestRecord):
    status = [200]
    try:
        outputs = with_keepalive(_noted(gen.outputs(call), record, status, meta))
        async for chunk in api.stream(call, outputs, meta):
            yield chunk
    except BaseException:
        status[0] = 499  # the client went away
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await gen.close()
            record.finish(engine, status[0])


async def _collect(request: Request, engine, api: Api, call: Call, gen, meta: Meta,
                   headers: dict, record: RequestRecord) -> Response:
    result = Collected()
    finished = False

    async def collect():
        nonlocal finished
        async for out in gen.outputs(call):
            if record.fields["ttft_ms"] is None:
                meta.first_at = time.monotonic()
                record.fields["ttft_ms"] = round((meta.first_at - record.started) * 1000, 1)
            result.add(out)
        finished = True

    async def watch_disconnect(cancel_scope):
        while not await request.is_disconnected():
            await anyio.sleep(0.25)
        cancel_scope.cancel()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_disconnect, tg.cancel_scope)
            await collect()
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await gen.close()
    if not finished:
        record.finish(engine, 499)
        return Response(status_code=499)
    record.note_usage(result.usage)
    if result.failure is not None:
        failure = result.failure
        record.finish(engine, failure.status)
        extra = {"Retry-After": "2"} if failure.status == 503 else {}
        error = ApiError(failure.status, failure.message,
                         "server_error" if failure.status >= 500 else "invalid_request_error",
                         failure.code)
        return api.error_response(error, {**headers, **extra})
    record.finish(engine, 200)
    return JSONResponse(api.collect(call, result, meta), headers=headers)


def _note_remote_usage(gen, record: RequestRecord) -> None:
    usage = gen.usage or {}
    record.fields["prompt_tokens"] = usage.get("prompt_tokens")
    record.fields["completion_tokens"] = usage.get("completion_tokens")


async def _relay(engine, api: Api, gen, headers: dict, record: RequestRecord) -> Response:
    """A remote's answer in the client's own API, passed through as it comes; a whole
    (non-streamed) answer in one piece with its length: its body is already generated, and a
    plain response costs the engine a task group, a generator and the chunked framing less."""
    if not gen.stream:
        return await _relay_whole(engine, api, gen, headers, record)
    status = gen.response.status_code

    async def body():
        nonlocal status
        try:
            async for chunk in gen.raw():
                yield chunk
        except httpx.HTTPError as exc:
            # The remote broke off mid-answer: a stream still ends in OpenAI's error shape.
            status = 502
            if gen.stream:
                failed = Failed("remote_error", f"remote model '{gen.served.name}' broke off: {exc!r}", 502)
                yield b"\n\n" + api.stream_failure(failed)
        finally:
            # no shield: the only cancel here is the response's one-shot task.cancel()
            await gen.close()

    def then() -> None:   # once the stream's end is out: its log entry is not on the client's clock
        _note_remote_usage(gen, record)
        record.note_answer_tail(engine, gen.tail)
        record.finish(engine, status)

    media_type = gen.response.headers.get("content-type", "application/json")
    return DisconnectAwareStreamingResponse(body(), status_code=gen.response.status_code,
                                            media_type=media_type, headers=headers, then=then)


async def _relay_whole(engine, api: Api, gen, headers: dict, record: RequestRecord) -> Response:
    try:
        content = await gen.read()
    except httpx.HTTPError as exc:   # broke off mid-answer: nothing reached the client yet
        record.finish(engine, 502)
        return api.error_response(ApiError(
            502, f"remote model '{gen.served.name}' broke off: {exc!r}", "server_error",
            "remote_error"), headers)
    finally:
        await gen.close()
    status = gen.response.status_code

    def then() -> None:
        _note_remote_usage(gen, record)
        record.note_answer_tail(engine, gen.tail)
        record.finish(engine, status)
    return _ThenLog(content, status_code=status, headers=headers,
                    media_type=gen.response.headers.get("content-type", "application/json"),
                    then=then)


class _ThenLog(Response):
    """A whole answer whose request-log entry (and its "why") is written once the answer is out,
    or the client gone: that bookkeeping is not on the client's clock. It runs on the loop's next
    turn, after the answer's held writes (engine/http_server.py) have left."""

    def __init__(self, *args, then, **kwargs):
        super().__init__(*args, **kwargs)
        self._then = then

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            asyncio.get_running_loop().call_soon(self._then)


async def list_models(request: Request) -> Response:
    engine = request.app.state.engine
    created = int(engine.started_at)
    data = [{"id": "auto", "object": "model", "created": created, "owned_by": "laya"}]
    data += [_model_json(m, created) for m in engine.config.models]
    return JSONResponse({"object": "list", "data": data})


def _model_json(model, created: int) -> dict:
    entry = {"id": model.name, "object": "model", "created": created, "owned_by": "laya",
             "backend": model.backend}
    if model.is_local:
        entry["context_length"] = model.n_ctx
    return entry


async def get_model(request: Request) -> Response:
    engine = request.app.state.engine
    name = request.path_params["name"]
    created = int(engine.started_at)
    if name == "auto":
        return JSONResponse({"id": "auto", "object": "model", "created": created, "owned_by": "laya"})
    model = engine.config.model(name)
    if model is None:
        return ApiError(404, f"The model '{name}' does not exist", "invalid_request_error",
                        "model_not_found").response()
    return JSONResponse(_model_json(model, created))


def count_endpoint(api):
    """Token counting (Anthropic's /v1/messages/count_tokens): the routed model's own tokenizer
    and template count the prompt, tools included; an anthropic remote counts for itself."""
    async def handle(request: Request) -> Response:
        engine = request.app.state.engine
        record = RequestRecord(request.url.path, api.name)
        routed = None
        try:
            call = await read_call(request, api, engine, count_only=True)
            call.path = request.url.path
            await embed_off_loop(engine.router, call.path, call.chat,
                                 request.headers.get("x-laya-tags"))
            routed = Routed(engine, call, request, record)
            served = engine.models.get(routed.decision.target)
            if served is None:
                raise errors.model_not_found(routed.decision.target)
            routed.served_by(served.name, record)
            if not served.is_local:
                if served.config.backend != "anthropic":
                    raise errors.bad_request(f"model '{served.name}' ({served.config.backend}) "
                                             "cannot count tokens", "model_not_supported")
                gen = await open_remote(engine.remote, served, call, request.headers)
                return await _relay(engine, api, gen, routed.headers, record)
            check_local(call, served)
            command = {**call.command, "count_only": True}
            gen = await unless_client_leaves(request, lambda: start_local(
                engine.models, served, command, engine.config.scheduler.queue_timeout_ms / 1000))
            if gen is None:
                record.finish(engine, 499)
                return Response(status_code=499)
            gen.finished = True
            await gen.close()
            tokens = int((gen.first.get("usage") or {}).get("prompt_tokens") or 0)
        except (ApiError, LoadRefused, RunnerError, QueueFull, QueueTimeout) as exc:
            error = _count_error(exc, routed.first if routed else None, engine)
            record.finish(engine, error.status)
            return api.error_response(error, routed.headers if routed else None)
        except ClientDisconnect:
            record.finish(engine, 499)
            return Response(status_code=499)
        record.fields["prompt_tokens"] = tokens
        record.finish(engine, 200)
        return JSONResponse(api.count_response(tokens), headers=routed.headers)
    handle.__name__ = f"count_{api.name}"
    return handle


def _count_error(exc: Exception, model: str | None, engine) -> ApiError:
    """A count that could not run, answered as a generation would be (dispatch.start_generation)."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, QueueFull):
        return errors.queue_full(model or "?")
    if isinstance(exc, QueueTimeout):
        return errors.queue_timeout(model or "?", engine.config.scheduler.queue_timeout_ms)
    if isinstance(exc, LoadRefused):
        return errors.unavailable(str(exc), "load_refused", retry_after=5)
    return errors.unavailable(str(exc), exc.code, retry_after=1)
