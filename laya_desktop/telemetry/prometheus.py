"""`GET /metrics`: Prometheus text exposition format 0.0.4, rendered from plain dicts.

Inputs (anything missing is left out, never reported as 0):
- `latest_sample`: a SystemSampler sample (ram_*, swap_*, cpu_pct, gpus) or None before the first.
- `models`: {name: {"loaded", "rss", "kv_used_tokens", "kv_capacity_tokens", "kv_bytes",
  "requests_active", "requests_queued", "tokens_per_s"}}; the aliases "rss_bytes", "active",
  "queued", "tokens_per_second" and "state" ("ready"/"busy" count as loaded) are accepted too.
- `counters`: {"requests": {(api, model, status): n}, "events": {kind: n}} — running totals.
"""
from __future__ import annotations

import math

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_LOADED_STATES = ("ready", "busy", "loaded")


def escape_label(value) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value) -> str | None:
    if value is None or isinstance(value, str):
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    v = float(value)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return str(int(v)) if v.is_integer() and abs(v) < 2 ** 53 else repr(v)


class _Writer:
    def __init__(self):
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_text: str, samples: list[tuple[dict, object]]) -> None:
        rendered = []
        for labels, value in samples:
            text = _number(value)
            if text is None:
                continue
            if labels:
                inner = ",".join(f'{k}="{escape_label(v)}"' for k, v in labels.items())
                rendered.append(f"{name}{{{inner}}} {text}")
            else:
                rendered.append(f"{name} {text}")
        if not rendered:
            return
        self.lines.append(f"# HELP {name} {help_text}")
        self.lines.append(f"# TYPE {name} {kind}")
        self.lines.extend(rendered)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n" if self.lines else ""


def _get(d: dict, *keys):
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return None


def _loaded(info: dict):
    if info.get("loaded") is not None:
        return bool(info["loaded"])
    if info.get("state") is not None:
        return info["state"] in _LOADED_STATES
    return None


def render_metrics(latest_sample: dict | None, models: dict, counters: dict) -> str:
    w = _Writer()
    s = latest_sample or {}
    w.family("laya_ram_available_bytes", "gauge", "RAM available to new work (incl. reclaimable cache).",
             [({}, s.get("ram_available"))])
    w.family("laya_ram_used_bytes", "gauge", "RAM in use.", [({}, s.get("ram_used"))])
    w.family("laya_ram_total_bytes", "gauge", "Installed RAM.", [({}, s.get("ram_total"))])
    w.family("laya_swap_used_bytes", "gauge", "Swap in use.", [({}, s.get("swap_used"))])
    w.family("laya_swap_in_bytes_per_second", "gauge", "Swap-in rate.", [({}, s.get("swap_in_bps"))])
    w.family("laya_swap_out_bytes_per_second", "gauge", "Swap-out rate.", [({}, s.get("swap_out_bps"))])
    w.family("laya_cpu_percent", "gauge", "System CPU use in percent.", [({}, s.get("cpu_pct"))])
    gpus = s.get("gpus") or []
    w.family("laya_gpu_memory_used_bytes", "gauge", "GPU memory in use.",
             [({"gpu": g.get("index")}, g.get("used")) for g in gpus])
    w.family("laya_gpu_memory_total_bytes", "gauge", "GPU memory installed.",
             [({"gpu": g.get("index")}, g.get("total")) for g in gpus])

    per_model = [
        ("laya_model_loaded", "1 when the model's runner is loaded.", _loaded),
        ("laya_model_rss_bytes", "Resident memory of the model's runner process.",
         lambda m: _get(m, "rss", "rss_bytes")),
        ("laya_model_kv_used_tokens", "KV cache cells in use.", lambda m: m.get("kv_used_tokens")),
        ("laya_model_kv_capacity_tokens", "KV cache capacity (n_ctx x parallel).",
         lambda m: m.get("kv_capacity_tokens")),
        ("laya_model_kv_bytes", "KV cache bytes in use.", lambda m: m.get("kv_bytes")),
        ("laya_model_requests_active", "Requests being generated.",
         lambda m: _get(m, "requests_active", "active")),
        ("laya_model_requests_queued", "Requests waiting for a slot.",
         lambda m: _get(m, "requests_queued", "queued")),
        ("laya_model_tokens_per_second", "Generated tokens per second, recent.",
         lambda m: _get(m, "tokens_per_s", "tokens_per_second")),
    ]
    for name, help_text, pick in per_model:
        w.family(name, "gauge", help_text,
                 [({"model": model}, pick(info or {})) for model, info in sorted(models.items())])

    requests = sorted((counters.get("requests") or {}).items(), key=lambda kv: tuple(map(str, kv[0])))
    w.family("laya_requests_total", "counter", "Requests answered, by API, model and HTTP status.",
             [({"api": api, "model": model or "", "status": status}, n)
              for (api, model, status), n in requests])
    events = counters.get("events") or {}
    w.family("laya_events_total", "counter", "Engine events (loads, unloads, refusals, crashes) by kind.",
             [({"kind": kind}, n) for kind, n in sorted(events.items())])
    return w.text()
