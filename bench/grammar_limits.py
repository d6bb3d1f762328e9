"""Where llama.cpp's grammar code breaks: bisect each JSON-schema dimension (a string's maxLength,
an array's maxItems, a pattern's {0,N}, an enum's size, object nesting, properties) for the size
at which the GBNF conversion, llama_sampler_init_grammar or the per-token grammar advance
crashes the process or takes longer than the budget.

Every trial runs in its own subprocess, so a segfault is a result, not the end of the probe. The
child converts the schema as the runner does (llama_sampling.schema_grammar), builds the grammar
sampler in a thread with the runner's grammar-worker stack (grammar_worker.GRAMMAR_STACK_BYTES),
clones it (to time a clone against a fresh init), and then samples TOKENS tokens through the
clone over the model's whole vocabulary with random logits, timing each grammar step (what the
runner's sampling_worker pays per token). Prints a table per dimension and
writes bench/results/grammar_limits/ (grammar_crashes/ with --crash-only).

    .venv/bin/python bench/grammar_limits.py                  # SmolLM2's 49k vocab, every kind
    .venv/bin/python bench/grammar_limits.py --kind enum --budget 2
"""
from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from publish import begin, write

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOKENS = 16


def schema_of(kind: str, n: int) -> dict:
    """A schema whose one size in `kind` is n."""
    if kind == "maxLength":
        return {"type": "string", "maxLength": n}
    if kind == "minLength":
        return {"type": "string", "minLength": n}
    if kind == "maxItems":
        return {"type": "array", "items": {"type": "integer"}, "maxItems": n}
    if kind == "pattern":
        return {"type": "string", "pattern": f"^a{{0,{n}}}$"}
    if kind == "enum":
        return {"enum": [f"value number {i:06d}" for i in range(n)]}
    if kind == "depth":
        schema: dict = {"type": "integer"}
        for _ in range(n):
            schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
        return schema
    if kind == "properties":
        return {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)}}
    raise ValueError(kind)


KINDS = ("maxLength", "minLength", "maxItems", "pattern", "enum", "depth", "properties")


# --- the child: one trial ----------------------------------------------------------------------

_quiet: list = []


def _load_vocab(path: str):
    import llama_cpp as L
    L.llama_backend_init()
    _quiet.append(L.llama_log_callback(lambda *a: None))   # must outlive every llama.cpp call
    L.llama_log_set(_quiet[-1], ctypes.c_void_p(0))
    params = L.llama_model_default_params()
    params.vocab_only = True
    model = L.llama_model_load_from_file(path.encode(), params)
    if not model:
        raise SystemExit(f"cannot load {path}")
    return model, L.llama_model_get_vocab(model)


def trial(kind: str, n: int, model_path: str) -> dict:
    import llama_cpp as L
    import numpy as np

    from laya_desktop.runners.grammar_worker import GRAMMAR_STACK_BYTES
    from laya_desktop.runners.llama_sampling import schema_grammar
    from laya_desktop.runners.protocol import BadRequest

    model, vocab = _load_vocab(model_path)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    out: dict = {"kind": kind, "n": n}
    t0 = time.perf_counter()
    try:
        gbnf = schema_grammar(schema_of(kind, n))
    except BadRequest as exc:
        return {**out, "status": "refused", "detail": str(exc)[:200]}
    out["convert_s"] = round(time.perf_counter() - t0, 4)
    out["gbnf_bytes"] = len(gbnf)
    out["gbnf_rules"] = gbnf.count("::=")
    print(json.dumps({**out, "status": "converted"}), flush=True)   # survives a crash below

    made: dict = {}

    def build():
        t = time.perf_counter()
        made["sampler"] = L.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
        made["init_s"] = time.perf_counter() - t

    threading.stack_size(GRAMMAR_STACK_BYTES)
    worker = threading.Thread(target=build)
    worker.start()
    worker.join()
    sampler = made["sampler"]
    out["init_s"] = round(made["init_s"], 4)
    if not sampler:
        return {**out, "status": "parse_failed"}
    t = time.perf_counter()
    clone = L.llama_sampler_clone(sampler)
    out["clone_s"] = round(time.perf_counter() - t, 5)
    print(json.dumps({**out, "status": "initialised"}), flush=True)

    rng = np.random.default_rng(0)
    data = (L.llama_token_data * n_vocab)()
    view = np.frombuffer(data, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
    arr = L.llama_token_data_array(data=data, size=n_vocab, selected=-1, sorted=False)
    per_token = []
    for _ in range(TOKENS):
        view["id"] = np.arange(n_vocab)
        view["logit"] = rng.standard_normal(n_vocab)
        arr.size, arr.selected, arr.sorted = n_vocab, -1, False
        t = time.perf_counter()
        L.llama_sampler_apply(clone, ctypes.byref(arr))
        per_token.append(time.perf_counter() - t)
        live = view[:arr.size]
        live = live[live["logit"] > -1e30]
        if not len(live):
            break
        token = int(live["id"][live["logit"].argmax()])
        if L.llama_vocab_is_eog(vocab, token):
            break
        t = time.perf_counter()
        L.llama_sampler_accept(clone, token)
        per_token[-1] += time.perf_counter() - t
    out["tokens"] = len(per_token)
    out["token_ms_max"] = round(max(per_token) * 1000, 3) if per_token else None
    out["token_ms_mean"] = round(sum(per_token) / len(per_token) * 1000, 3) if per_token else None
    L.llama_sampler_free(clone)
    L.llama_sampler_free(sampler)
    return {**out, "status": "ok"}


# --- the parent: bisect ------------------------------------------------------------------------

def run_trial(kind: str, n: int, model: str, budget_s: float) -> dict:
    cmd = [sys.executable, __file__, "--trial", kind, str(n), "--model", model]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=budget_s * 3 + 10)
    except subprocess.TimeoutExpired:
        return {"kind": kind, "n": n, "status": "hung", "wall_s": round(time.perf_counter() - t0, 2)}
    lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    result = lines[-1] if lines else {"kind": kind, "n": n}
    result["wall_s"] = round(time.perf_counter() - t0, 2)
    if proc.returncode < 0:
        result["status"] = f"crashed (signal {-proc.returncode}) after {result.get('status', 'start')}"
    elif proc.returncode != 0:
        result["status"] = f"failed (exit {proc.returncode}) after {result.get('status', 'start')}"
        result["detail"] = proc.stderr[-300:]
    return result


def good(result: dict, budget_s: float, token_ms: float | None) -> bool:
    """Built within the budget and sampled without crashing (and within `token_ms` a token,
    unless that is None: the crash-only bisection)."""
    if result.get("status") in ("parse_failed", "refused"):
        return token_ms is None   # a clean refusal is not a crash
    return (result.get("status") == "ok"
            and result.get("convert_s", 0) + result.get("init_s", 0) <= budget_s
            and (token_ms is None or (result.get("token_ms_max") or 0) <= token_ms))


def bisect(kind: str, model: str, budget_s: float, token_ms: float | None, start: int,
           ceiling: int) -> dict:
    """The largest good n and the first bad one, doubling from `start` then halving the gap."""
    trials = []
    lo, hi, n = 0, None, start
    while n <= ceiling:
        r = run_trial(kind, n, model, budget_s)
        trials.append(r)
        print(f"  {kind:>10} n={n:<9} {r.get('status'):<40} convert {r.get('convert_s')} s "
              f"init {r.get('init_s')} s clone {r.get('clone_s')} s  token {r.get('token_ms_max')} ms "
              f"gbnf {r.get('gbnf_bytes')} B / {r.get('gbnf_rules')} rules", file=sys.stderr)
        if good(r, budget_s, token_ms):
            lo = n
            n *= 2
        else:
            hi = n
            break
    while hi is not None and hi - lo > max(lo // 16, 1):
        mid = (lo + hi) // 2
        r = run_trial(kind, mid, model, budget_s)
        trials.append(r)
        print(f"  {kind:>10} n={mid:<9} {r.get('status'):<40} convert {r.get('convert_s')} s "
              f"init {r.get('init_s')} s token {r.get('token_ms_max')} ms "
              f"gbnf {r.get('gbnf_bytes')} B", file=sys.stderr)
        if good(r, budget_s, token_ms):
            lo = mid
        else:
            hi = mid
    first_bad = next((t for t in trials if t["n"] == hi), None)
    last_good = next((t for t in trials if t["n"] == lo), None)
    return {"kind": kind, "largest_good": lo, "first_bad": hi, "first_bad_trial": first_bad,
            "largest_good_trial": last_good, "trials": trials}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="builtin:smollm2-135m-instruct",
                    help="a GGUF (or builtin:NAME) whose vocabulary the grammar runs over")
    ap.add_argument("--kind", action="append", choices=KINDS)
    ap.add_argument("--budget", type=float, default=2.0,
                    help="seconds that conversion plus grammar init may take")
    ap.add_argument("--token-budget-ms", type=float, default=50.0,
                    help="the most milliseconds one token's grammar step may take")
    ap.add_argument("--crash-only", action="store_true",
                    help="bisect for crashes and hangs only (a slow or refused grammar is good)")
    ap.add_argument("--ceiling", type=int, default=1 << 20)
    ap.add_argument("--trial", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    begun = begin()
    from laya_desktop.runners.builtin import resolve_model_path
    model = str(resolve_model_path(args.model))
    if args.trial:
        print(json.dumps(trial(args.trial[0], int(args.trial[1]), model)), flush=True)
        return 0
    results = []
    for kind in args.kind or KINDS:
        print(f"{kind}:", file=sys.stderr)
        token_ms = None if args.crash_only else args.token_budget_ms
        results.append(bisect(kind, model, args.budget, token_ms,
                              64 if kind != "depth" else 8, args.ceiling))
    print(f"\n{'kind':>10} {'largest good':>13} {'first bad':>10}  why", file=sys.stderr)
    for r in results:
        bad = r["first_bad_trial"] or {}
        print(f"{r['kind']:>10} {r['largest_good']:>13} {str(r['first_bad']):>10}  "
              f"{bad.get('status', '-')} (convert {bad.get('convert_s')} s, init {bad.get('init_s')} s, "
              f"token {bad.get('token_ms_max')} ms)",
              file=sys.stderr)
    report = {"model": model, "budget_s": args.budget, "crash_only": args.crash_only,
              "token_budget_ms": None if args.crash_only else args.token_budget_ms, "stack_bytes": _stack(),
              "results": results}
    out = write("grammar_crashes" if args.crash_only else "grammar_limits", report, begun)
    print(json.dumps({"written": str(out), "summary": [
        {k: r[k] for k in ("kind", "largest_good", "first_bad")} for r in results]}))
    return 0


def _stack() -> int:
    from laya_desktop.runners.grammar_worker import GRAMMAR_STACK_BYTES
    return GRAMMAR_STACK_BYTES


if __name__ == "__main__":
    sys.exit(main())
