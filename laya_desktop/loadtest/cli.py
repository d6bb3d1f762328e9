"""`laya loadtest`: a progress bar on stderr while it runs, then a table; or one JSON object.
`--sweep` runs the capacity sweep instead."""
from __future__ import annotations

import argparse
import json
import sys

from laya_desktop.loadtest.prompts import MIXES, Prompt, builtin, read_jsonl
from laya_desktop.loadtest.report import RequestResult, render_table


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options beyond the first ones (rate mode, duration, prompt mix, sweep)."""
    p.add_argument("--rate", type=float, default=None,
                   help="open loop: requests per second, Poisson arrivals (instead of --concurrency)")
    p.add_argument("--duration", type=float, default=None,
                   help="seconds to send for (instead of --requests)")
    p.add_argument("--prompt-mix", choices=MIXES, default=None, help="a built-in prompt mix")
    p.add_argument("--sweep", action="store_true",
                   help="capacity sweep: concurrency 1, 2, 4, … up to --max-concurrency")
    p.add_argument("--max-concurrency", type=int, default=8, help="with --sweep")
    p.add_argument("--prompt-lengths", default="",
                   help="with --sweep: prompt lengths in characters, comma-separated (say 0,4000)")
    p.add_argument("--ttft-target-ms", type=float, default=2000.0, help="with --sweep")
    p.add_argument("--step-requests", type=int, default=None,
                   help="with --sweep: requests a step (default 4 × concurrency, at least 8)")


class _Progress:
    def __init__(self, total: int | None, stream=sys.stderr, width: int = 30):
        self.total, self.stream, self.width = total, stream, width
        self.done = self.errors = 0

    def __call__(self, result: RequestResult) -> None:
        self.done += 1
        self.errors += 0 if result.ok else 1
        if self.total:
            filled = self.width * self.done // max(self.total, 1)
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(f"\r[{bar}] {self.done}/{self.total}  errors {self.errors}")
        else:
            self.stream.write(f"\r{self.done} done  errors {self.errors}")
        self.stream.flush()

    def finish(self) -> None:
        if self.done:
            self.stream.write("\n")
            self.stream.flush()


def read_prompts(path: str | None, mix: str | None = None) -> list[Prompt]:
    if mix:
        return builtin(mix)
    if not path:
        from laya_desktop.loadtest.generator import DEFAULT_PROMPTS
        return [Prompt(t) for t in DEFAULT_PROMPTS]
    if path.endswith(".jsonl"):
        return read_jsonl(path)
    with open(path, encoding="utf-8") as f:
        prompts = [Prompt(line.strip()) for line in f if line.strip()]
    if not prompts:
        raise ValueError(f"{path}: no prompts (one per line)")
    return prompts


def _lengths(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--prompt-lengths: integers, comma-separated, got {text!r}") from None
    if any(v < 0 for v in values):
        raise ValueError("--prompt-lengths: not negative")
    return values


def _check(args) -> tuple[list[Prompt], list[int]]:
    prompts = read_prompts(getattr(args, "prompts", None), getattr(args, "prompt_mix", None))
    if args.concurrency < 1 or args.requests < 1 or args.max_tokens < 1:
        raise ValueError("--concurrency, --requests and --max-tokens must be at least 1")
    if getattr(args, "rate", None) is not None and args.rate <= 0:
        raise ValueError("--rate must be above 0")
    if getattr(args, "duration", None) is not None and args.duration <= 0:
        raise ValueError("--duration must be above 0")
    if getattr(args, "sweep", False) and args.max_concurrency < 1:
        raise ValueError("--max-concurrency must be at least 1")
    if getattr(args, "sweep", False) and args.ttft_target_ms <= 0:
        raise ValueError("--ttft-target-ms must be above 0")
    return prompts, _lengths(getattr(args, "prompt_lengths", "") or "")


def run_loadtest(args) -> int:
    as_json = bool(getattr(args, "json", False))
    try:
        prompts, lengths = _check(args)
    except (OSError, ValueError) as exc:
        message = str(exc)
        if as_json:
            print(json.dumps({"error": {"message": message}}))
        print(f"laya loadtest: {message}", file=sys.stderr)
        return 2
    if getattr(args, "sweep", False):
        return _run_sweep(args, prompts, lengths, as_json)
    duration = getattr(args, "duration", None)
    progress = None if as_json else _Progress(None if duration else args.requests)
    # here, not at the top: every `laya` command builds this parser, and the generator's httpx
    # costs `laya serve` a tenth of its start-up
    from laya_desktop.loadtest.generator import run_loadtest_sync
    try:
        report = run_loadtest_sync(
            args.url, concurrency=args.concurrency, requests=None if duration else args.requests,
            max_tokens=args.max_tokens, prompts=prompts, tags=getattr(args, "tags", None) or None,
            model=getattr(args, "model", "auto") or "auto", api_key=getattr(args, "api_key", None),
            stream=getattr(args, "stream", True), on_result=progress,
            rate=getattr(args, "rate", None), duration_s=duration)
    except KeyboardInterrupt:
        if progress:
            progress.finish()
        print("laya loadtest: interrupted", file=sys.stderr)
        return 130
    if progress:
        progress.finish()
    summary = report.summary()
    if as_json:
        print(json.dumps(summary))
    else:
        print(render_table(summary))
    # exit 1 only when nothing got through (wrong URL, server down, every request refused)
    return 0 if summary["ok"] > 0 else 1


def _run_sweep(args, prompts: list[Prompt], lengths: list[int], as_json: bool) -> int:
    from laya_desktop.loadtest.sweep import render_sweep, run_sweep_sync

    def said(step, _report) -> None:
        if not as_json:
            print(f"step: {step.concurrency} clients, {step.prompt_chars} prompt chars: "
                  f"{step.tokens_per_s:.1f} tok/s, TTFT p95 {step.ttft_p95_ms} ms, errors {step.errors}",
                  file=sys.stderr)
    try:
        sweep = run_sweep_sync(args.url, max_concurrency=args.max_concurrency, prompt_lengths=lengths,
                               ttft_target_ms=args.ttft_target_ms, requests_per_step=args.step_requests,
                               max_tokens=args.max_tokens, prompts=prompts,
                               tags=getattr(args, "tags", None) or None,
                               model=getattr(args, "model", "auto") or "auto",
                               api_key=getattr(args, "api_key", None), on_step=said)
    except KeyboardInterrupt:
        print("laya loadtest: interrupted", file=sys.stderr)
        return 130
    if as_json:
        print(json.dumps(sweep))
    else:
        print(render_sweep(sweep))
    return 0 if any(s["requests"] - s["errors"] > 0 for s in sweep["steps"]) else 1
