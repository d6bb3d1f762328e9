"""`GET /metrics`: one prometheus_client registry per engine, never the process-global default.

Two kinds of collector feed it:
- counters and histograms updated as things happen: `observe_request` for each request-log entry,
  `observe_event` for each engine event (the engine wires both as listeners);
- `LiveCollector`, which reads the latest telemetry sample and the model table at scrape time and
  turns them into gauges. Anything missing is left out, never reported as 0.

Names follow Prometheus conventions: base units (`_bytes`, `_seconds`), `_total` on counters,
`_ratio` for fractions (0..1).
"""
from __future__ import annotations

from typing import Callable

from prometheus_client import (CollectorRegistry, Counter, Histogram, disable_created_metrics,
                               generate_latest)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from laya_desktop.telemetry.events import EventKind
from laya_desktop.telemetry.model_sample import ModelSample

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Local TTFT spans a cached 10 ms to a cold load of a minute; a whole request up to a long answer.
TTFT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
DURATION_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

# Events that are the memory guard acting, by the action they stand for. An unload the guard makes
# to admit another model is a plain `model_unloaded` event carrying guard_action="evict".
GUARD_EVENT_ACTIONS = {EventKind.EMERGENCY_UNLOAD: "emergency_unload",
                       EventKind.LOAD_REFUSED: "refuse_load"}

# () -> (latest telemetry sample or None, {model name: its record as it is now}); see LiveCollector.
LiveInputs = Callable[[], "tuple[dict | None, dict[str, ModelSample]]"]
# () -> {remote model name: "up" | "ejected" | "unknown"}; see UpstreamCollector.
UpstreamInputs = Callable[[], "dict[str, str]"]


def _cpu_ratio(sample: dict):
    pct = sample.get("cpu_pct")
    return None if pct is None else pct / 100.0


_SYSTEM = (  # (name, help, pick from the sample)
    ("laya_ram_available_bytes", "RAM available to new work (incl. reclaimable cache).",
     lambda s: s.get("ram_available")),
    ("laya_ram_used_bytes", "RAM in use.", lambda s: s.get("ram_used")),
    ("laya_ram_total_bytes", "Installed RAM.", lambda s: s.get("ram_total")),
    ("laya_swap_used_bytes", "Swap in use.", lambda s: s.get("swap_used")),
    ("laya_swap_in_bytes_per_second", "Swap-in rate.", lambda s: s.get("swap_in_bps")),
    ("laya_swap_out_bytes_per_second", "Swap-out rate.", lambda s: s.get("swap_out_bps")),
    ("laya_cpu_usage_ratio", "System CPU use, 0 to 1.", _cpu_ratio),
)

_PER_MODEL = (  # (name, help, pick from the model's record)
    ("laya_model_loaded", "1 when the model's runner is loaded.", lambda m: m.loaded),
    ("laya_model_rss_bytes", "Resident memory of the model's runner process.", lambda m: m.rss),
    ("laya_model_kv_used_tokens", "KV cache cells in use.", lambda m: m.kv_used_tokens),
    ("laya_model_kv_capacity_tokens", "KV cache capacity (n_ctx x parallel).",
     lambda m: m.kv_capacity_tokens),
    ("laya_model_kv_bytes", "KV cache bytes in use.", lambda m: m.kv_bytes),
    ("laya_model_requests_active", "Requests being generated.", lambda m: m.active),
    ("laya_model_requests_queued", "Requests waiting for a slot.", lambda m: m.queued),
    ("laya_model_tokens_per_second", "Generated tokens per second, recent.",
     lambda m: m.tokens_per_s),
)


# A runner's prompt cache (runners/prompt_cache.py), per tier: (name, help, stat per tier, kind).
# The counters count from the runner's start: a reload resets them, which Prometheus reads as
# a counter reset.
_PROMPT_CACHE = (
    ("laya_prompt_cache_bytes", "Bytes of saved prompt states.", "prompt_cache_{}_bytes", "gauge"),
    ("laya_prompt_cache_entries", "Saved prompt states.", "prompt_cache_{}_entries", "gauge"),
    ("laya_prompt_cache_evictions", "Saved prompt states evicted by the tier's budget.",
     "prompt_cache_evictions_{}", "counter"),
)
_PROMPT_CACHE_TIERS = ("ram", "disk")


def _prompt_cache_families(models: dict[str, ModelSample]):
    cached = sorted((name, m.prompt_cache) for name, m in models.items() if m.prompt_cache)
    for name, help_text, key, kind in _PROMPT_CACHE:
        family = (GaugeMetricFamily if kind == "gauge" else CounterMetricFamily)(
            name, help_text, labels=["model", "tier"])
        for model, stats in cached:
            for tier in _PROMPT_CACHE_TIERS:
                value = _value(stats.get(key.format(tier)))
                if value is not None:
                    family.add_metric([model, tier], value)
        if family.samples:
            yield family
    family = CounterMetricFamily("laya_prompt_cache_write_errors", "Prompt cache writes that "
                                 "failed (a full or read-only disk); writing pauses, serving "
                                 "goes on.", labels=["model"])
    for model, stats in cached:
        if stats.get("prompt_cache_write_errors") is not None:
            family.add_metric([model], float(stats["prompt_cache_write_errors"]))
    if family.samples:
        yield family


def _value(value) -> float | None:
    return None if value is None else float(value)


class LiveCollector(Collector):
    """Gauges read at scrape time from `inputs()`: system memory, CPU, GPUs and each model.

    `inputs` gives the sample SystemSampler produced (ram_*, swap_*, cpu_pct, gpus) and each
    model's ModelSample.
    """

    def __init__(self, inputs: LiveInputs):
        self._inputs = inputs

    def describe(self):
        return []  # the families depend on what the sample holds: nothing fixed to describe

    def collect(self):
        sample, models = self._inputs()
        sample = sample or {}
        for name, help_text, pick in _SYSTEM:
            value = _value(pick(sample))
            if value is not None:
                yield GaugeMetricFamily(name, help_text, value=value)
        gpus = sample.get("gpus") or []
        for name, key, help_text in (("laya_gpu_memory_used_bytes", "used", "GPU memory in use."),
                                     ("laya_gpu_memory_total_bytes", "total", "GPU memory installed.")):
            family = GaugeMetricFamily(name, help_text, labels=["gpu"])
            for gpu in gpus:
                value = _value(gpu.get(key))
                if value is not None:
                    family.add_metric([str(gpu.get("index"))], value)
            if family.samples:
                yield family
        for name, help_text, pick in _PER_MODEL:
            family = GaugeMetricFamily(name, help_text, labels=["model"])
            for model, record in sorted(models.items()):
                value = _value(pick(record))
                if value is not None:
                    family.add_metric([model], value)
            if family.samples:
                yield family
        yield from _prompt_cache_families(models)


class UpstreamCollector(Collector):
    """laya_upstream_up{model}: 1 while a remote model is up, 0 while it is ejected (skipped by
    requests); one not judged yet (no request, no probe) is left out."""

    def __init__(self, inputs: UpstreamInputs):
        self._inputs = inputs

    def describe(self):
        return []

    def collect(self):
        family = GaugeMetricFamily("laya_upstream_up", "1 while a remote model answers, 0 while "
                                   "it is ejected after failing.", labels=["model"])
        for model, health in sorted(self._inputs().items()):
            if health in ("up", "ejected"):
                family.add_metric([model], 1.0 if health == "up" else 0.0)
        if family.samples:
            yield family


class EngineMetrics:
    """The engine's registry and the counters and histograms the request and event logs move."""

    def __init__(self, live: LiveInputs | None = None, upstreams: UpstreamInputs | None = None):
        # No `<name>_created` gauge beside every series: in the 0.0.4 text format each is a family
        # of its own, doubling what a dashboard lists. (A process-wide switch in prometheus_client.)
        disable_created_metrics()
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("laya_requests", "Requests answered, by API, routing rule, model and "
                                "HTTP status.", ["api", "rule", "model", "status"], registry=r)
        self.fallbacks = Counter("laya_request_fallbacks", "Requests served by a fallback instead "
                                 "of their rule's target.", ["rule", "target", "model"], registry=r)
        self.prompt_tokens = Counter("laya_prompt_tokens", "Prompt tokens read, cached ones "
                                     "included.", ["model"], registry=r)
        self.cached_tokens = Counter("laya_prompt_cached_tokens", "Prompt tokens taken from the "
                                     "KV/prompt cache instead of being computed.", ["model"],
                                     registry=r)
        self.completion_tokens = Counter("laya_completion_tokens", "Tokens generated.", ["model"],
                                         registry=r)
        self.cache_hits = Counter("laya_prompt_cache_hits", "Requests whose prompt started from "
                                  "saved KV, by where it came from: slot (the sequence still held "
                                  "it), ram or disk (the prompt cache).", ["model", "source"],
                                  registry=r)
        self.cache_tokens = Counter("laya_prompt_cache_restored_tokens", "Prompt tokens whose KV "
                                    "came from a slot or the prompt cache, by source.",
                                    ["model", "source"], registry=r)
        self.ttft = Histogram("laya_time_to_first_token_seconds", "Time from the request's "
                              "arrival to its first output.", ["model"], buckets=TTFT_BUCKETS,
                              registry=r)
        self.duration = Histogram("laya_request_duration_seconds", "Time from the request's "
                                  "arrival to its last byte.", ["api", "model"],
                                  buckets=DURATION_BUCKETS, registry=r)
        self.events = Counter("laya_events", "Engine events (loads, unloads, refusals, crashes) by "
                              "kind.", ["kind"], registry=r)
        self.guard_actions = Counter("laya_guard_actions", "Memory guard actions: emergency "
                                     "unloads, refused loads, evictions to admit a model.",
                                     ["action", "model"], registry=r)
        self._children: dict[tuple, object] = {}
        if live is not None:
            r.register(LiveCollector(live))
        if upstreams is not None:
            r.register(UpstreamCollector(upstreams))

    def _child(self, metric, *values: str):
        """metric.labels(*values), remembered: labels() checks and converts its values on every
        call, and every request moves five series."""
        key = (metric, values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def observe_request(self, entry: dict) -> None:
        """One finished request, shaped like a request-log entry."""
        api, model, rule = entry.get("api") or "", entry.get("model") or "", entry.get("rule") or ""
        status = str(int(entry.get("status") or 0))
        self._child(self.requests, api, rule, model, status).inc()
        if entry.get("fallback_from"):
            self._child(self.fallbacks, rule, entry["fallback_from"], model).inc()
        for counter, key in ((self.prompt_tokens, "prompt_tokens"),
                             (self.cached_tokens, "cached_tokens"),
                             (self.completion_tokens, "completion_tokens")):
            n = entry.get(key)
            if isinstance(n, (int, float)) and n > 0:
                self._child(counter, model).inc(n)
        source, cached = entry.get("cached_from"), entry.get("cached_tokens")
        if source and isinstance(cached, int) and cached > 0:
            self._child(self.cache_hits, model, source).inc()
            self._child(self.cache_tokens, model, source).inc(cached)
        if entry.get("ttft_ms") is not None:
            self._child(self.ttft, model).observe(entry["ttft_ms"] / 1000)
        if entry.get("duration_ms") is not None:
            self._child(self.duration, api, model).observe(entry["duration_ms"] / 1000)

    def observe_event(self, event: dict) -> None:
        kind = event.get("kind") or ""
        self.events.labels(kind).inc()
        action = event.get("guard_action") or GUARD_EVENT_ACTIONS.get(kind)
        if action:
            self.guard_actions.labels(action, event.get("model") or "").inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
