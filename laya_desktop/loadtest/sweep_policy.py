"""The capacity sweep's decisions, pure: which steps to run, when to stop, what to recommend.

A step is one load test at a concurrency (and a prompt length); its figures come from the load
test and from the engine's telemetry and events during it (`step_memory`). Nothing here does I/O.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from laya_desktop.telemetry.events import EventKind

GUARD_EVENTS = frozenset({EventKind.EMERGENCY_UNLOAD, EventKind.LOAD_REFUSED,
                          EventKind.RUNNER_CRASHED})
SWAP_MOVED_BYTES = 16 * (1 << 20)     # less than this in or out during a step is noise, not swapping
GIB = 1 << 30


@dataclass
class StepResult:
    concurrency: int
    prompt_chars: int = 0
    requests: int = 0
    errors: int = 0
    tokens_per_s: float = 0.0
    ttft_p50_ms: float | None = None
    ttft_p95_ms: float | None = None
    latency_p95_ms: float | None = None
    peak_ram_used: float | None = None        # bytes
    min_ram_available: float | None = None    # bytes
    ram_total: float | None = None
    swap_moved: float = 0.0                   # bytes swapped in + out during the step
    peak_kv_pct: float | None = None
    guard_events: list[str] = field(default_factory=list)
    stop: str | None = None                   # why the sweep stopped after this step
    per_model: dict = field(default_factory=dict)   # answering model: share and latency (report.per_model)

    def to_dict(self) -> dict:
        return asdict(self)


def steps(max_concurrency: int, prompt_lengths: list[int] | None = None) -> list[tuple[int, int]]:
    """(concurrency, prompt_chars) in order: 1, 2, 4, … and `max_concurrency` itself, for each
    prompt length from the shortest."""
    if max_concurrency < 1:
        raise ValueError("the sweep's concurrency limit must be at least 1")
    levels, c = [], 1
    while c < max_concurrency:
        levels.append(c)
        c *= 2
    levels.append(max_concurrency)
    lengths = sorted(set(prompt_lengths or [0]))
    return [(c, n) for n in lengths for c in levels]


def stop_reason(step: StepResult, swap_moved_bytes: float = SWAP_MOVED_BYTES) -> str | None:
    """"guard" (the guard unloaded or refused a model, or a runner died), "swap" (the machine
    swapped), "errors" (a request failed), or None to go on. Any of them ends the whole sweep:
    a longer prompt or more clients would only push the same limit harder."""
    if any(kind in GUARD_EVENTS for kind in step.guard_events):
        return "guard"
    if step.swap_moved >= swap_moved_bytes:
        return "swap"
    if step.errors:
        return "errors"
    return None


def step_memory(samples: list[dict], events: list[dict]) -> dict:
    """Peak RAM used, lowest RAM available, swap moved and peak KV use over a step's telemetry
    samples; the kinds of the engine events in it."""
    out: dict = {"peak_ram_used": None, "min_ram_available": None, "ram_total": None,
                 "swap_moved": 0.0, "peak_kv_pct": None,
                 "guard_events": [e.get("kind", "") for e in events if e.get("kind") in GUARD_EVENTS]}
    swap_used = []
    for s in samples:
        for key, pick in (("peak_ram_used", max), ("min_ram_available", min)):
            v = s.get("ram_used" if key == "peak_ram_used" else "ram_available")
            if isinstance(v, (int, float)):
                out[key] = v if out[key] is None else pick(out[key], v)
        if isinstance(s.get("ram_total"), (int, float)):
            out["ram_total"] = s["ram_total"]
        if isinstance(s.get("swap_used"), (int, float)):
            swap_used.append(float(s["swap_used"]))
        for m in (s.get("models") or {}).values():
            used, cap = m.get("kv_used_tokens"), m.get("kv_capacity_tokens")
            if isinstance(used, (int, float)) and cap:
                pct = 100.0 * used / cap
                out["peak_kv_pct"] = pct if out["peak_kv_pct"] is None else max(out["peak_kv_pct"], pct)
    # the rates are per second, sampled at sample_hz: the change in swap used is the sturdier figure
    if len(swap_used) > 1:
        out["swap_moved"] = max(swap_used) - min(swap_used)
    rates = [float(s.get("swap_in_bps") or 0) + float(s.get("swap_out_bps") or 0) for s in samples]
    if len(samples) > 1:
        span = float(samples[-1].get("t", 0)) - float(samples[0].get("t", 0))
        moved_by_rate = (sum(rates) / len(rates)) * max(span, 0.0)
        out["swap_moved"] = max(out["swap_moved"], moved_by_rate)
    return out


def memory_limit(memory: dict, ram_total: float | None) -> tuple[float | None, float | None]:
    """(most RAM used, least RAM available) the guard allows, from the config's memory section."""
    high, reserved = memory.get("ram_high_pct"), memory.get("reserved_system_gb")
    used_cap = float(ram_total) * float(high) / 100 if ram_total and isinstance(high, (int, float)) else None
    avail_floor = float(reserved) * GIB if isinstance(reserved, (int, float)) else None
    return used_cap, avail_floor


def within_memory(step: StepResult, memory: dict) -> bool:
    used_cap, avail_floor = memory_limit(memory, step.ram_total)
    if used_cap is not None and step.peak_ram_used is not None and step.peak_ram_used > used_cap:
        return False
    if avail_floor is not None and step.min_ram_available is not None and step.min_ram_available < avail_floor:
        return False
    return True


def recommend(results: list[StepResult], ttft_target_ms: float, memory: dict | None = None) -> dict:
    """The highest concurrency (at the longest prompt that reached it) whose TTFT p95 meets the
    target, with no errors, no guard event, no swapping, and memory under the guard's limits.
    {"concurrency", "prompt_chars", "tokens_per_s", "ttft_p95_ms", "reason"}; concurrency None
    when no step qualified, and the reason says why."""
    memory = memory or {}
    fits, why_not = [], []
    for r in results:
        problem = stop_reason(r)
        if problem is None and not within_memory(r, memory):
            problem = "memory"
        if problem is None and (r.ttft_p95_ms is None or r.ttft_p95_ms > ttft_target_ms):
            problem = "ttft"
        (why_not if problem else fits).append((r, problem))
    if not fits:
        reasons = sorted({p for _r, p in why_not})
        return {"concurrency": None, "prompt_chars": None, "tokens_per_s": None, "ttft_p95_ms": None,
                "reason": "no step met the target" + (f" ({', '.join(reasons)})" if reasons else "")}
    best = max(fits, key=lambda rp: (rp[0].concurrency, rp[0].prompt_chars))[0]
    return {"concurrency": best.concurrency, "prompt_chars": best.prompt_chars,
            "tokens_per_s": best.tokens_per_s, "ttft_p95_ms": best.ttft_p95_ms,
            "reason": f"TTFT p95 {best.ttft_p95_ms:.0f} ms ≤ {ttft_target_ms:g} ms within the memory limits"}
