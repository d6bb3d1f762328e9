"""`laya loadtest`: a progress bar on stderr while it runs, then a table; or one JSON object."""
from __future__ import annotations

import json
import sys

from laya_desktop.loadtest.generator import DEFAULT_PROMPTS, run_loadtest_sync
from laya_desktop.loadtest.report import RequestResult, render_table


class _Progress:
    def __init__(self, total: int, stream=sys.stderr, width: int = 30):
        self.total, self.stream, self.width = total, stream, width
        self.done = self.errors = 0

    def __call__(self, result: RequestResult) -> None:
        self.done += 1
        self.errors += 0 if result.ok else 1
        filled = self.width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r[{bar}] {self.done}/{self.total}  errors {self.errors}")
        self.stream.flush()

    def finish(self) -> None:
        if self.done:
            self.stream.write("\n")
            self.stream.flush()


def _read_prompts(path: str | None) -> list[str]:
    if not path:
        return list(DEFAULT_PROMPTS)
    with open(path, encoding="utf-8") as f:
        prompts = [line.strip() for line in f if line.strip()]
    if not prompts:
        raise ValueError(f"{path}: no prompts (one per line)")
    return prompts


def run_loadtest(args) -> int:
    as_json = bool(getattr(args, "json", False))
    try:
        prompts = _read_prompts(getattr(args, "prompts", None))
        if args.concurrency < 1 or args.requests < 1 or args.max_tokens < 1:
            raise ValueError("--concurrency, --requests and --max-tokens must be at least 1")
    except (OSError, ValueError) as exc:
        message = str(exc)
        if as_json:
            print(json.dumps({"error": {"message": message}}))
        print(f"laya loadtest: {message}", file=sys.stderr)
        return 2
    progress = None if as_json else _Progress(args.requests)
    try:
        report = run_loadtest_sync(
            args.url, concurrency=args.concurrency, requests=args.requests,
            max_tokens=args.max_tokens, prompts=prompts, tags=getattr(args, "tags", None) or None,
            model=getattr(args, "model", "auto") or "auto", api_key=getattr(args, "api_key", None),
            stream=getattr(args, "stream", True), on_result=progress)
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
