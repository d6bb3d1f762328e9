"""`laya models search TEXT` and `laya pull REPO[:FILE]`: tables and the progress bar on stderr,
one JSON object on stdout with --json. Exit codes: 0 done, 1 failed, 2 a choice is needed (the
repository offers several and none was named), 130 interrupted (the partial file stays: the same
command resumes it)."""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

from laya_desktop.hub.errors import HubError
from laya_desktop.hub.choose import pick, split_repo
from laya_desktop.hub.types import RepoFiles

BAR_WIDTH = 28


def default_mlx() -> bool:
    """Apple Silicon runs MLX builds; elsewhere search finds GGUF ones."""
    return sys.platform == "darwin" and platform.machine() == "arm64"


def add_search_arguments(p) -> None:
    p.add_argument("text", help="what to look for, e.g. 'qwen coder'")
    p.add_argument("--mlx", action=argparse.BooleanOptionalAction, default=None,
                   help="MLX builds (mlx-community) instead of GGUF (default: on Apple Silicon)")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true")


def add_pull_arguments(p) -> None:
    p.add_argument("repo", metavar="REPO[:FILE]",
                   help="a Hugging Face repository, with a quantization (Q4_K_M) or file name "
                        "after ':' when it offers several")
    p.add_argument("--config", "-c", default=None,
                   help="models.yaml to add the model to (default: ./models.yaml, then the user's)")
    p.add_argument("--list", action="store_true",
                   help="list the repository's choices with Laya's memory estimate; download nothing")
    p.add_argument("--n-ctx", type=int, default=None,
                   help="tokens per sequence (default: the model's, at most 8192, less if it does not fit)")
    p.add_argument("--parallel", type=int, default=None, help="sequences at once (default 4; MLX 1)")
    p.add_argument("--name", default=None, help="the model's name in models.yaml")
    p.add_argument("--rule", default=None,
                   help="also send a rule's requests to it (an existing rule, 'default' for the "
                        "catch-all, or a new rule matching the tag of that name)")
    p.add_argument("--no-register", action="store_true", help="download only; leave models.yaml alone")
    p.add_argument("--revision", default="main")
    p.add_argument("--models-dir", default=None, help="download folder (default: server.models_dir, "
                                                      "LAYA_MODELS_DIR, then the user's data folder)")
    p.add_argument("--json", action="store_true")


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _fail(exc: Exception, as_json: bool) -> int:
    code = getattr(exc, "code", "error")
    print(f"laya: {exc}", file=sys.stderr)
    if as_json:
        print(json.dumps({"error": {"message": str(exc), "code": code}}))
    return 1


def run_search(args) -> int:
    from laya_desktop.hub.search import search_repos
    mlx = default_mlx() if args.mlx is None else args.mlx
    try:
        hits = search_repos(args.text, mlx=mlx, limit=args.limit)
    except (HubError, ValueError) as exc:
        return _fail(exc, args.json)
    if args.json:
        print(json.dumps({"kind": "mlx" if mlx else "gguf", "results": [h.to_dict() for h in hits]}))
        return 0
    if not hits:
        print(f"no {'MLX' if mlx else 'GGUF'} repositories match {args.text!r}", file=sys.stderr)
        return 0
    width = max(len(h.repo_id) for h in hits)
    print(f"{'repository':<{width}}  {'downloads':>9}  {'likes':>5}  licence        gated",
          file=sys.stderr)
    for h in hits:
        print(f"{h.repo_id:<{width}}  {h.downloads:>9}  {h.likes:>5}  {(h.license or '-'):<14} "
              f"{'yes' if h.gated else 'no'}", file=sys.stderr)
    return 0


def _fits(files: RepoFiles, n_ctx: int, parallel: int) -> list[dict]:
    from laya_desktop.hub.fit import judge_fit, this_machine
    machine = this_machine()
    return [{**c.to_dict(), "fit": judge_fit(c, n_ctx=n_ctx, parallel=parallel,
                                             machine=machine).to_dict()}
            for c in files.choices]


def _print_choices(files: RepoFiles, rows: list[dict], n_ctx: int, parallel: int) -> None:
    print(f"{files.repo_id} @ {files.revision[:12]}  licence: {files.license or '-'}"
          f"  gated: {'yes' if files.gated else 'no'}", file=sys.stderr)
    print(f"memory at n_ctx {n_ctx} x parallel {parallel}:", file=sys.stderr)
    width = max((len(r["quant"]) for r in rows), default=5)
    for r in rows:
        parts = f" ({len(r['files'])} parts)" if len(r["files"]) > 1 else ""
        fit = r["fit"]
        print(f"  {r['quant']:<{width}}  {_size(r['total_bytes']):>10}{parts}  "
              f"{fit['verdict'].replace('_', ' '):<12}  {fit['reason']}", file=sys.stderr)


def _bar(status) -> str:
    frac = status.done_bytes / status.total_bytes if status.total_bytes else 0.0
    filled = int(frac * BAR_WIDTH)
    eta = "" if status.eta_s is None else f"  {int(status.eta_s) // 60}:{int(status.eta_s) % 60:02d} left"
    return (f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {frac * 100:5.1f}%  "
            f"{_size(status.done_bytes)} / {_size(status.total_bytes)}  "
            f"{_size(status.speed_bps)}/s{eta}  {status.state}   ")


def run_pull(args) -> int:
    from laya_desktop.config.store import ConfigInvalid, find_config_path, load_config
    from laya_desktop.hub.download import DownloadManager
    from laya_desktop.hub.files import repo_choices
    from laya_desktop.hub.folders import models_dir, state_file
    from laya_desktop.hub.register import describe, register_download

    try:
        repo_id, wanted = split_repo(args.repo)
        config_path = None if args.no_register and args.models_dir else find_config_path(args.config)
        config = load_config(config_path) if config_path else None
        folder = Path(args.models_dir).expanduser().resolve() if args.models_dir else models_dir(config)
        files = repo_choices(repo_id, revision=args.revision)
        if not files.choices:
            raise HubError(f"{repo_id} has no GGUF file or MLX build that Laya can serve")
        n_ctx, parallel = args.n_ctx or 4096, args.parallel or 4
        choice = None if args.list else pick(files, wanted)
        if choice is None:
            rows = _fits(files, n_ctx, parallel)
            if args.json:
                print(json.dumps({**files.to_dict(), "choices": rows}))
            else:
                _print_choices(files, rows, n_ctx, parallel)
                if not args.list:
                    print(f"name one: laya pull {repo_id}:{files.choices[0].quant}", file=sys.stderr)
            return 0 if args.list else 2
    except ConfigInvalid as exc:
        return _fail(exc, args.json)
    except (HubError, ValueError) as exc:
        return _fail(exc, args.json)

    if not args.json:
        print(f"{repo_id} {choice.quant} ({_size(choice.total_bytes)})  licence: "
              f"{files.license or '-'}{'  gated' if files.gated else ''}  -> {folder}",
              file=sys.stderr)
    manager = DownloadManager(folder, state_file(folder))
    try:
        job = manager.start(repo_id, choice)
    except HubError as exc:
        return _fail(exc, args.json)
    try:
        status = _follow(manager, job, quiet=args.json)
    except KeyboardInterrupt:
        print(f"\nlaya: interrupted; the partial download stays in {folder}: run the same "
              "command again to resume", file=sys.stderr)
        return 130
    if status.state != "done":
        return _fail(HubError(status.error or status.state), args.json)
    out = {"repo_id": repo_id, "quant": choice.quant, "revision": files.revision,
           "license": files.license, "path": status.local_path, "bytes": status.total_bytes}
    if not args.no_register:
        try:
            name, notes = register_download(config_path, Path(status.local_path), name=args.name,
                                            rule=args.rule, n_ctx=args.n_ctx,
                                            parallel=args.parallel)
        except (ValueError, OSError, ConfigInvalid) as exc:
            return _fail(HubError(f"downloaded to {status.local_path}, not added to "
                                  f"{config_path}: {exc}"), args.json)
        out.update(model=name, config=str(config_path), entry=describe(config_path, name),
                   notes=notes, rule=args.rule)
        if not args.json:
            print(f"added model {name!r} to {config_path}", file=sys.stderr)
            for note in notes:
                print(f"  {note}", file=sys.stderr)
            if args.rule:
                print(f"  rule {args.rule!r} now sends its requests to {name!r}", file=sys.stderr)
    elif not args.json:
        print(f"downloaded to {status.local_path}", file=sys.stderr)
    if args.json:
        print(json.dumps(out))
    return 0


def _follow(manager, job: str, quiet: bool):
    tty = sys.stderr.isatty()
    last = 0.0
    while True:
        status = manager.wait(job, timeout=0.25)
        if not quiet and (tty or time.monotonic() - last > 2 or status.finished):
            print(_bar(status), end="" if tty else "\n", file=sys.stderr, flush=True)
            last = time.monotonic()
        if status.finished:
            if not quiet and tty:
                print(file=sys.stderr)
            return status
