"""Load-test results and their aggregation: pure functions over RequestResult lists."""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field


@dataclass
class RequestResult:
    index: int
    status: int                     # HTTP status; 0 when no response came (connection error, timeout)
    latency_ms: float
    ttft_ms: float | None = None    # first content chunk (streaming only)
    completion_tokens: int = 0
    route: str | None = None        # X-Laya-Route
    model: str | None = None        # X-Laya-Model
    error: str | None = None
    started_s: float = 0.0          # seconds from the start of the test
    itl_ms: float | None = None     # mean gap between content chunks after the first (streaming)
    fallback_from: str | None = None  # X-Laya-Fallback-From: the first choice that could not serve
    prompt_chars: int = 0

    @property
    def finished_s(self) -> float:
        return self.started_s + self.latency_ms / 1000

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300 and self.error is None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class LoadTestReport:
    results: list[RequestResult]
    wall_s: float
    url: str = ""
    concurrency: int = 0
    cancelled: bool = False
    settings: dict = field(default_factory=dict)

    def summary(self) -> dict:
        out = aggregate(self.results, self.wall_s)
        out.update({"url": self.url, "concurrency": self.concurrency, "cancelled": self.cancelled})
        out.update(self.settings)
        return out


def percentile(values: list[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default); None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _dist(values: list[float]) -> dict:
    def r(v):
        return None if v is None else round(v, 2)
    return {"p50": r(percentile(values, 50)), "p95": r(percentile(values, 95)),
            "p99": r(percentile(values, 99)),
            "mean": r(sum(values) / len(values)) if values else None,
            "max": r(max(values)) if values else None}


def aggregate(results: list[RequestResult], wall_s: float) -> dict:
    """{"requests", "ok", "errors", "status_counts", "latency_ms", "ttft_ms", "itl_ms",
    "tokens_per_s", "completion_tokens", "requests_per_s", "wall_s", "routes", "models",
    "fallbacks", "route_models", "errors_by_cause", "error_samples", "per_model"}.

    Latency and TTFT percentiles are over successful requests only (a refusal answered in 1 ms
    would otherwise look like speed); tokens/s is completion tokens of successful requests over
    the test's wall time.
    """
    ok = [r for r in results if r.ok]
    status_counts: dict[str, int] = {}
    routes: dict[str, int] = {}
    models: dict[str, int] = {}
    fallbacks: dict[str, int] = {}
    route_models: dict[str, int] = {}
    causes: dict[str, int] = {}
    samples: list[str] = []
    for r in results:
        key = str(r.status) if r.status else "no_response"
        status_counts[key] = status_counts.get(key, 0) + 1
        if r.route:
            routes[r.route] = routes.get(r.route, 0) + 1
        if r.model:
            models[r.model] = models.get(r.model, 0) + 1
        if r.route and r.model:
            pair = f"{r.route} → {r.model}"
            route_models[pair] = route_models.get(pair, 0) + 1
        if r.fallback_from and r.model:
            moved = f"{r.fallback_from} → {r.model}"
            fallbacks[moved] = fallbacks.get(moved, 0) + 1
        if not r.ok:
            cause = error_cause(r)
            causes[cause] = causes.get(cause, 0) + 1
        if not r.ok and r.error and r.error not in samples and len(samples) < 5:
            samples.append(r.error)
    tokens = sum(r.completion_tokens for r in ok)
    return {
        "requests": len(results),
        "ok": len(ok),
        "errors": len(results) - len(ok),
        "status_counts": dict(sorted(status_counts.items())),
        "latency_ms": _dist([r.latency_ms for r in ok]),
        "ttft_ms": _dist([r.ttft_ms for r in ok if r.ttft_ms is not None]),
        "itl_ms": _dist([r.itl_ms for r in ok if r.itl_ms is not None]),
        "completion_tokens": tokens,
        "tokens_per_s": round(tokens / wall_s, 2) if wall_s > 0 else 0.0,
        "requests_per_s": round(len(results) / wall_s, 2) if wall_s > 0 else 0.0,
        "wall_s": round(wall_s, 3),
        "routes": dict(sorted(routes.items())),
        "models": dict(sorted(models.items())),
        "route_models": dict(sorted(route_models.items())),
        "fallbacks": dict(sorted(fallbacks.items())),
        "errors_by_cause": dict(sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))),
        "error_samples": samples,
        "per_model": per_model(results),
    }


def per_model(results: list[RequestResult]) -> dict:
    """Each answering model's share and latency, for a rule spread over replicas:
    {model: {"requests", "ok", "errors", "share_pct", "latency_ms", "ttft_ms"}}. The model is the
    one that answered (X-Laya-Model, after any fallback); the share is of the requests some model
    answered, and the latencies are over that model's successful requests."""
    by_model: dict[str, list[RequestResult]] = {}
    for r in results:
        if r.model:
            by_model.setdefault(r.model, []).append(r)
    answered = sum(len(rs) for rs in by_model.values())
    out = {}
    for model, rs in sorted(by_model.items()):
        ok = [r for r in rs if r.ok]
        out[model] = {"requests": len(rs), "ok": len(ok), "errors": len(rs) - len(ok),
                      "share_pct": round(100 * len(rs) / answered, 1),
                      "latency_ms": _dist([r.latency_ms for r in ok]),
                      "ttft_ms": _dist([r.ttft_ms for r in ok if r.ttft_ms is not None])}
    return out


def render_per_model(per: dict, indent: str = "") -> list[str]:
    """The per-model lines of a table: share, latency p50/p95, TTFT p95 and errors of each."""
    lines = [f"{indent}{'model':<20} {'requests':>8} {'share':>7} {'p50 ms':>9} {'p95 ms':>9} "
             f"{'TTFT p95':>9} {'errors':>6}"]
    for model, m in per.items():
        lat = m["latency_ms"]
        lines.append(f"{indent}{model:<20} {m['requests']:>8} {m['share_pct']:>6.1f}% "
                     f"{_ms(lat['p50']):>9} {_ms(lat['p95']):>9} {_ms(m['ttft_ms']['p95']):>9} "
                     f"{m['errors']:>6}")
    return lines


_NUMBERS = re.compile(r"\d+(\.\d+)?")


def error_cause(r: RequestResult) -> str:
    """A failed request's cause, stable across requests: the status with the message's numbers
    blanked ("429: queue full", "no response: ReadTimeout"), so 300 timeouts are one row."""
    text = (r.error or "").strip()
    if not r.status:
        return "no response: " + (text.split(":", 1)[0] or "unknown")
    if text.startswith(f"{r.status}:"):
        text = text[len(str(r.status)) + 1:].strip()
    text = _NUMBERS.sub("N", text)[:80] or "no message"
    return f"{r.status}: {text}" if not 200 <= r.status < 300 else text


def histogram(values: list[float], bins: int = 20) -> tuple[list[float], list[int]]:
    """(edges, counts): `bins` equal bins from min to max; one bin for a single distinct value."""
    xs = [v for v in values if v is not None and math.isfinite(v)]
    if not xs:
        return [], []
    lo, hi = min(xs), max(xs)
    if hi == lo:
        return [lo, lo + 1.0], [len(xs)]
    width = (hi - lo) / bins
    counts = [0] * bins
    for v in xs:
        counts[min(int((v - lo) / width), bins - 1)] += 1
    return [lo + i * width for i in range(bins + 1)], counts


def _ms(v) -> str:
    return "-" if v is None else f"{v:.1f}"


def render_table(summary: dict) -> str:
    """A plain-text table of a summary from `aggregate` / `LoadTestReport.summary`."""
    lat, ttft = summary["latency_ms"], summary["ttft_ms"]
    lines = [
        f"requests     {summary['requests']}  ok {summary['ok']}  errors {summary['errors']}"
        f"  in {summary['wall_s']:.2f} s ({summary['requests_per_s']:.2f} req/s)",
        "statuses     " + ", ".join(f"{k}: {v}" for k, v in summary["status_counts"].items()),
        "",
        f"{'':12} {'p50':>9} {'p95':>9} {'p99':>9} {'mean':>9} {'max':>9}",
        f"{'latency ms':12} " + " ".join(f"{_ms(lat[k]):>9}" for k in ("p50", "p95", "p99", "mean", "max")),
        f"{'TTFT ms':12} " + " ".join(f"{_ms(ttft[k]):>9}" for k in ("p50", "p95", "p99", "mean", "max")),
        f"{'ITL ms':12} " + " ".join(f"{_ms((summary.get('itl_ms') or {}).get(k)):>9}"
                                     for k in ("p50", "p95", "p99", "mean", "max")),
        "",
        f"tokens/s     {summary['tokens_per_s']:.1f}  ({summary['completion_tokens']} completion tokens)",
    ]
    if summary["routes"]:
        lines.append("routes       " + ", ".join(f"{k}: {v}" for k, v in summary["routes"].items()))
    if summary["models"]:
        lines.append("models       " + ", ".join(f"{k}: {v}" for k, v in summary["models"].items()))
    if summary.get("fallbacks"):
        lines.append("fallbacks    " + ", ".join(f"{k}: {v}" for k, v in summary["fallbacks"].items()))
    if len(summary.get("per_model") or {}) > 1:   # a rule spread over replicas
        lines += ["", *render_per_model(summary["per_model"]), ""]
    for cause, n in (summary.get("errors_by_cause") or {}).items():
        lines.append(f"errors       {n} × {cause}")
    for err in summary.get("error_samples", []):
        lines.append(f"error        {err}")
    if summary.get("cancelled"):
        lines.append("cancelled before all requests were sent")
    return "\n".join(lines)
