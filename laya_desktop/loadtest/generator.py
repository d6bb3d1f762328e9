"""The load generator: `concurrency` workers (closed loop) or Poisson arrivals at `rate` requests/s
(open loop) send chat completions, for a count of requests or a duration, and time them.

Shared by `laya loadtest` and the GUI's load tester. Streaming requests time the first content
chunk (TTFT) and take the completion token count from the final usage chunk (requested with
`stream_options: {"include_usage": true}`), else count content chunks. Every result goes to
`on_result` as it lands, so the GUI can plot live; `cancel` (anything with `is_set()`: a
threading.Event from the GUI thread, or an asyncio.Event) stops new requests and cuts streams in
flight short.
"""
from __future__ import annotations

import asyncio
import inspect
import json
import logging
import random
import time
from typing import Callable

import httpx

from laya_desktop.admin_api.calls import CHAT_PATH
from laya_desktop.loadtest.prompts import CODE, SHORT_CHAT, Prompt
from laya_desktop.loadtest.report import LoadTestReport, RequestResult

log = logging.getLogger(__name__)

# The prompts a load test sends when given none: the short chat mix with one code question.
DEFAULT_PROMPTS = [*SHORT_CHAT[:5], CODE[0], *SHORT_CHAT[5:]]


def chat_url(url: str) -> str:
    """The chat completions endpoint for a server root, with or without a trailing /v1."""
    root = url.strip().rstrip("/")
    if root.endswith("/v1"):
        root = root[:-3]
    return root + CHAT_PATH


def _error_text(body: bytes | str, status: int) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        err = json.loads(text).get("error")
        if isinstance(err, dict) and err.get("message"):
            return f"{status}: {err['message']}"
    except (ValueError, AttributeError):
        pass
    return f"{status}: {text.strip()[:200] or 'no body'}"


class _Cancelled(Exception):
    pass


async def _one(client: httpx.AsyncClient, endpoint: str, headers: dict, body: dict, stream: bool,
               index: int, t0: float, cancel) -> RequestResult:
    start = time.perf_counter()
    result = RequestResult(index=index, status=0, latency_ms=0.0, started_s=round(start - t0, 4))
    try:
        if stream:
            await _stream(client, endpoint, headers, body, result, start, cancel)
        else:
            resp = await client.post(endpoint, headers=headers, json=body)
            _take_headers(result, resp)
            if resp.status_code != 200:
                result.error = _error_text(resp.content, resp.status_code)
            else:
                data = resp.json()
                usage = data.get("usage") or {}
                result.completion_tokens = int(usage.get("completion_tokens") or 0)
    except _Cancelled:
        result.error = result.error or "cancelled"
    except httpx.HTTPError as exc:
        result.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    except (ValueError, KeyError, TypeError) as exc:
        result.error = f"bad response: {exc}"
    result.latency_ms = round((time.perf_counter() - start) * 1000, 2)
    return result


def _take_headers(result: RequestResult, resp: httpx.Response) -> None:
    result.status = resp.status_code
    result.route = resp.headers.get("x-laya-route")
    result.model = resp.headers.get("x-laya-model")
    result.fallback_from = resp.headers.get("x-laya-fallback-from")


async def _stream(client, endpoint, headers, body, result: RequestResult, start: float, cancel) -> None:
    async with client.stream("POST", endpoint, headers=headers, json=body) as resp:
        _take_headers(result, resp)
        if resp.status_code != 200:
            result.error = _error_text(await resp.aread(), resp.status_code)
            return
        chunks = 0
        usage_tokens = None
        done = False
        first_at = last_at = 0.0
        async for line in resp.aiter_lines():
            if cancel is not None and cancel.is_set():
                raise _Cancelled
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                done = True
                break
            chunk = json.loads(payload)
            if chunk.get("error"):
                err = chunk["error"]
                result.error = f"stream error: {err.get('message') if isinstance(err, dict) else err}"
                return
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    chunks += 1
                    last_at = time.perf_counter()
                    if result.ttft_ms is None:
                        first_at = last_at
                        result.ttft_ms = round((last_at - start) * 1000, 2)
            if chunk.get("usage"):
                usage_tokens = chunk["usage"].get("completion_tokens")
        if not done:
            result.error = "stream ended without [DONE]"
        result.completion_tokens = int(usage_tokens) if usage_tokens is not None else chunks
        if chunks > 1:
            result.itl_ms = round((last_at - first_at) * 1000 / (chunks - 1), 3)


def _as_prompts(prompts) -> list[Prompt]:
    out = [p if isinstance(p, Prompt) else Prompt(str(p)) for p in (prompts or DEFAULT_PROMPTS)]
    return [p for p in out if p.text.strip()] or [Prompt(t) for t in DEFAULT_PROMPTS]


def poisson_arrivals(rate: float, seed: int = 1):
    """Seconds from the start at which the open loop sends: exponential gaps of mean 1/rate."""
    rng = random.Random(seed)
    t = 0.0
    while True:
        t += rng.expovariate(rate)
        yield t


async def run_loadtest(url: str, concurrency: int = 4, requests: int | None = 40, max_tokens: int = 16,
                       prompts: list | None = None, tags: list[str] | None = None,
                       model: str = "auto", api_key: str | None = None, stream: bool = True,
                       on_result: Callable[[RequestResult], object] | None = None, cancel=None,
                       timeout_s: float = 300.0, temperature: float | None = None,
                       transport: httpx.AsyncBaseTransport | None = None, rate: float | None = None,
                       duration_s: float | None = None, seed: int = 1) -> LoadTestReport:
    """Send chat completions until `requests` were sent or `duration_s` passed (whichever is set;
    both: the first reached), at most `concurrency` at a time, or, with `rate`, at Poisson arrival
    times whatever is in flight. Returns when all are answered (or `cancel` is set). Request i uses
    prompts[i % len(prompts)]; a Prompt's tags join `tags` in its X-Laya-Tags."""
    if concurrency < 1 or (requests is not None and requests < 0):
        raise ValueError("concurrency must be at least 1 and requests not negative")
    if requests is None and not duration_s:
        raise ValueError("give a request count or a duration")
    if rate is not None and rate <= 0:
        raise ValueError("rate must be above 0 requests/s")
    specs = _as_prompts(prompts)
    endpoint = chat_url(url)
    base_headers = {"Content-Type": "application/json"}
    if api_key:
        base_headers["Authorization"] = f"Bearer {api_key}"

    def request_for(i: int) -> tuple[dict, dict, int]:
        spec = specs[i % len(specs)]
        body = {"model": model, "messages": [{"role": "user", "content": spec.text}],
                "max_tokens": max_tokens, "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        if temperature is not None:
            body["temperature"] = temperature
        headers = dict(base_headers)
        all_tags = list(tags or []) + [t for t in spec.tags if t not in (tags or [])]
        if all_tags:
            headers["X-Laya-Tags"] = ",".join(all_tags)
        return headers, body, len(spec.text)

    results: list[RequestResult] = []
    next_index = 0
    t0 = time.perf_counter()
    deadline = t0 + duration_s if duration_s else None
    # the open loop must not queue in the client's pool: that would hide the server's queueing
    pool = concurrency if rate is None else max(concurrency, 512)
    limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
    timeout = httpx.Timeout(timeout_s, connect=10.0)

    def more() -> bool:
        if cancel is not None and cancel.is_set():
            return False
        if requests is not None and next_index >= requests:
            return False
        return deadline is None or time.perf_counter() < deadline

    async def send(client: httpx.AsyncClient, i: int) -> None:
        headers, body, chars = request_for(i)
        result = await _one(client, endpoint, headers, body, stream, i, t0, cancel)
        result.prompt_chars = chars
        results.append(result)
        if on_result is not None:
            try:
                ret = on_result(result)
                if inspect.isawaitable(ret):
                    await ret
            except Exception:
                log.exception("loadtest on_result callback failed")

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal next_index
        while more():
            i = next_index
            next_index += 1
            await send(client, i)

    async def open_loop(client: httpx.AsyncClient) -> None:
        nonlocal next_index
        tasks = []
        for at in poisson_arrivals(rate, seed):
            while True:       # sleep in short steps so Stop is seen between sparse arrivals
                wait = t0 + at - time.perf_counter()
                if wait <= 0 or not more():
                    break
                await asyncio.sleep(min(wait, 0.1))
            if not more():
                break
            tasks.append(asyncio.ensure_future(send(client, next_index)))
            next_index += 1
        await asyncio.gather(*tasks)

    async with httpx.AsyncClient(limits=limits, timeout=timeout, transport=transport) as client:
        if rate is not None:
            await open_loop(client)
        else:
            workers = concurrency if requests is None else min(concurrency, max(requests, 1))
            await asyncio.gather(*(worker(client) for _ in range(workers)))
    wall = time.perf_counter() - t0
    results.sort(key=lambda r: r.index)
    cancelled = (cancel is not None and cancel.is_set()
                 and ((requests is not None and len(results) < requests)
                      or requests is None or any(r.error == "cancelled" for r in results)))
    return LoadTestReport(results=results, wall_s=wall, url=url, concurrency=concurrency,
                          cancelled=bool(cancelled),
                          settings={"max_tokens": max_tokens, "stream": stream, "model": model,
                                    "mode": "rate" if rate is not None else "concurrency",
                                    "rate": rate, "duration_s": duration_s})


def run_loadtest_sync(*args, **kwargs) -> LoadTestReport:
    """`run_loadtest` on a fresh event loop (for a worker thread or a script)."""
    return asyncio.run(run_loadtest(*args, **kwargs))
