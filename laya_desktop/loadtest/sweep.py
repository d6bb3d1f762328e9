"""The capacity sweep: a load test at each step of `sweep_policy.steps`, with the engine's
telemetry and events over the step (GET /admin/telemetry?since=, /admin/events?since=), until a
step gives a reason to stop; then the recommendation.

Shared by `laya loadtest --sweep` and the GUI's sweep, like the generator.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable, TypeVar

import httpx

from laya_desktop.admin_api import calls
from laya_desktop.admin_api.answers import Page
from laya_desktop.admin_api.errors import AdminError
from laya_desktop.loadtest import sweep_policy as policy
from laya_desktop.loadtest.generator import DEFAULT_PROMPTS, run_loadtest
from laya_desktop.loadtest.prompts import Prompt, padded
from laya_desktop.loadtest.report import LoadTestReport

log = logging.getLogger(__name__)
LATEST = 2 ** 62      # ?since= this: no items, only the newest seq
T = TypeVar("T")


def _root(url: str) -> str:
    root = url.strip().rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


class EngineWatch:
    """The engine's telemetry and events since a mark; the guard's memory limits."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def _send(self, call: calls.Call[T], default: T) -> T:
        try:
            resp = await self.client.request(call.method, call.path, json=call.body,
                                             headers=dict(call.headers))
            return call.answer(resp.status_code, resp.content, resp.headers)
        except (httpx.HTTPError, AdminError):
            return default   # an engine without telemetry still gets its load figures

    async def mark(self) -> tuple[int, int]:
        t, e = await asyncio.gather(self._send(calls.telemetry(LATEST), Page(0)),
                                    self._send(calls.events(LATEST), Page(0)))
        return t.seq, e.seq

    async def since(self, mark: tuple[int, int]) -> tuple[list[dict], list[dict]]:
        t, e = await asyncio.gather(self._send(calls.telemetry(mark[0]), Page(0)),
                                    self._send(calls.events(mark[1]), Page(0)))
        return t.items, e.items

    async def memory_config(self) -> dict:
        applied = await self._send(calls.config(), None)
        return (applied.config.get("memory") if applied else None) or {}


def step_result(concurrency: int, prompt_chars: int, report: LoadTestReport, samples: list[dict],
                events: list[dict]) -> policy.StepResult:
    s = report.summary()
    step = policy.StepResult(concurrency=concurrency, prompt_chars=prompt_chars, requests=s["requests"],
                             errors=s["errors"], tokens_per_s=s["tokens_per_s"],
                             ttft_p50_ms=s["ttft_ms"]["p50"], ttft_p95_ms=s["ttft_ms"]["p95"],
                             latency_p95_ms=s["latency_ms"]["p95"], per_model=s["per_model"])
    for key, value in policy.step_memory(samples, events).items():
        setattr(step, key, value)
    for name, peak in peak_model_memory(samples).items():
        if name in step.per_model:
            step.per_model[name]["peak_memory_bytes"] = peak
    return step


def peak_model_memory(samples: list[dict]) -> dict[str, int]:
    """Each local model's highest resident memory (private + shared) over a step's samples;
    a remote model has no runner and so no entry."""
    peaks: dict[str, int] = {}
    for s in samples:
        for name, m in (s.get("models") or {}).items():
            used = (m.get("private") or 0) + (m.get("shared") or 0)
            if used:
                peaks[name] = max(peaks.get(name, 0), used)
    return peaks


async def run_sweep(url: str, max_concurrency: int = 8, prompt_lengths: list[int] | None = None,
                    ttft_target_ms: float = 2000.0, requests_per_step: int | None = None,
                    max_tokens: int = 32, prompts: list | None = None, tags: list[str] | None = None,
                    model: str = "auto", api_key: str | None = None,
                    on_step: Callable[[policy.StepResult, LoadTestReport], object] | None = None,
                    on_result=None, cancel=None, settle_s: float = 0.6,
                    timeout_s: float = 300.0, warmup: bool = True) -> dict:
    """{"steps": [StepResult dicts], "recommendation": {...}, "stopped": reason or None,
    "memory": the guard's limits, "ttft_target_ms"}."""
    plan = policy.steps(max_concurrency, prompt_lengths)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    base = [p if isinstance(p, Prompt) else Prompt(str(p)) for p in prompts] if prompts else None
    results: list[policy.StepResult] = []
    stopped = None
    async with httpx.AsyncClient(base_url=_root(url), headers=headers, timeout=10.0) as admin:
        watch = EngineWatch(admin)
        memory = await watch.memory_config()
        if warmup:   # the model's load must not count as the first step's TTFT
            await run_loadtest(url, concurrency=1, requests=1, max_tokens=1, prompts=base, tags=tags,
                               model=model, api_key=api_key, cancel=cancel, timeout_s=timeout_s)
        sweep_t0 = time.perf_counter()
        for concurrency, chars in plan:
            if cancel is not None and cancel.is_set():
                stopped = "cancelled"
                break
            mark = await watch.mark()
            n = requests_per_step or max(8, 4 * concurrency)
            step_prompts = padded(base or [Prompt(t) for t in DEFAULT_PROMPTS], chars)
            offset = time.perf_counter() - sweep_t0

            def forward(result, offset=offset):
                result.started_s = round(result.started_s + offset, 4)   # seconds since the sweep began
                return on_result(result)
            report = await run_loadtest(url, concurrency=concurrency, requests=n, max_tokens=max_tokens,
                                        prompts=step_prompts, tags=tags, model=model, api_key=api_key,
                                        cancel=cancel, on_result=forward if on_result else None,
                                        timeout_s=timeout_s)
            await asyncio.sleep(settle_s)   # the samples that cover the step's last requests
            samples, events = await watch.since(mark)
            step = step_result(concurrency, chars, report, samples, events)
            step.stop = policy.stop_reason(step)
            results.append(step)
            if on_step is not None:
                try:
                    on_step(step, report)
                except Exception:
                    log.exception("sweep on_step callback failed")
            if step.stop:
                stopped = step.stop
                break
    return {"steps": [r.to_dict() for r in results],
            "recommendation": policy.recommend(results, ttft_target_ms, memory),
            "stopped": stopped, "memory": {k: memory.get(k) for k in ("ram_high_pct", "reserved_system_gb")},
            "ttft_target_ms": ttft_target_ms, "max_concurrency": max_concurrency}


def run_sweep_sync(*args, **kwargs) -> dict:
    return asyncio.run(run_sweep(*args, **kwargs))


def render_sweep(sweep: dict) -> str:
    """The sweep's table and recommendation, as text."""
    def ms(v):
        return "-" if v is None else f"{v:.0f}"

    def gib(v):
        return "-" if v is None else f"{v / policy.GIB:.2f}"
    lines = [f"{'clients':>7} {'prompt ch':>9} {'tok/s':>8} {'TTFT p50':>9} {'p95 ms':>7} {'peak RAM GiB':>12} "
             f"{'swap MiB':>8} {'KV %':>5} {'errors':>6}  stop"]
    for s in sweep["steps"]:
        kv = "-" if s["peak_kv_pct"] is None else f"{s['peak_kv_pct']:.0f}"
        lines.append(f"{s['concurrency']:>7} {s['prompt_chars']:>9} {s['tokens_per_s']:>8.1f} "
                     f"{ms(s['ttft_p50_ms']):>9} {ms(s['ttft_p95_ms']):>7} {gib(s['peak_ram_used']):>12} "
                     f"{s['swap_moved'] / (1 << 20):>8.1f} {kv:>5} {s['errors']:>6}  "
                     f"{s['stop'] or ''}{' ' + ','.join(s['guard_events']) if s['guard_events'] else ''}")
        if len(s.get("per_model") or {}) > 1:   # a rule spread over replicas: each one's part
            lines.append(" " * 8 + "; ".join(
                f"{name} {m['share_pct']:.0f} % p95 {ms(m['latency_ms']['p95'])} ms"
                + (f" {gib(m['peak_memory_bytes'])} GiB" if m.get("peak_memory_bytes") else "")
                + (f" {m['errors']} errors" if m["errors"] else "")
                for name, m in s["per_model"].items()))
    rec = sweep["recommendation"]
    if rec["concurrency"] is None:
        lines.append(f"recommendation: none — {rec['reason']}")
    else:
        lines.append(f"recommendation: {rec['concurrency']} clients"
                     + (f" at {rec['prompt_chars']} prompt characters" if rec["prompt_chars"] else "")
                     + f" ({rec['tokens_per_s']:.1f} tok/s; {rec['reason']})")
    return "\n".join(lines)
