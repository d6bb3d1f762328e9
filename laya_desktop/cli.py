"""The `laya` command line. Each subcommand's work lives in its part; this only parses and dispatches.

A frozen build has no `python -m`, so the runner process is started as `laya _runner ...` too.
"""
from __future__ import annotations

import argparse
import sys


def _add_config(p: argparse.ArgumentParser,
                help: str = "models.yaml to use (default: ./models.yaml, then the user's config folder)",
                ) -> None:
    p.add_argument("--config", "-c", default=None, help=help)


def _version_text() -> str:
    from laya_desktop import __version__
    return f"laya {__version__}"


def _add_engine_commands(sub) -> None:
    """ps / load / unload talk to a running engine, like `ollama ps` and `lms load`."""
    def engine_args(p: argparse.ArgumentParser) -> None:
        _add_config(p)
        p.add_argument("--url", default=None,
                       help="engine root (default: server host and port from the config)")
        p.add_argument("--api-key", default=None, help="default: server.api_key from the config")
        p.add_argument("--json", action="store_true")

    p = sub.add_parser("ps", help="models loaded in the running engine, with their memory")
    engine_args(p)
    p.add_argument("--all", action="store_true", help="list every registered model")
    for name, text in (("load", "load a model into the running engine"),
                       ("unload", "unload a model from the running engine")):
        p = sub.add_parser(name, help=text)
        engine_args(p)
        p.add_argument("name", help="the model's name in models.yaml")


def _add_launch_command(sub) -> None:
    p = sub.add_parser("launch", help="start Codex CLI or Claude Code against this engine")
    p.add_argument("client", choices=["codex", "claude"])
    _add_config(p)
    p.add_argument("--url", default=None, help="engine root (default: server host and port from the config)")
    p.add_argument("--api-key", default=None, help="default: server.api_key from the config")
    p.add_argument("--model", default=None,
                   help="the model name the client asks for (default: Codex 'auto', Claude Code its own; "
                        "Laya's rules route any name)")
    p.add_argument("--write-config", action="store_true",
                   help="also write these settings into the client's own config file (a copy of the "
                        "old one is kept beside it)")
    p.add_argument("--no-auto-memory", action="store_true",
                   help="Claude Code: turn its per-project memory off, so that sessions in different "
                        "projects share their whole instructions and a prompt cache serves them")
    p.add_argument("--print", action="store_true", help="print the command line instead of running it")
    p.add_argument("--no-check", action="store_true", help="start the client without checking the engine answers")
    p.add_argument("client_args", nargs="*", help="after --: arguments for the client")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="laya", description="Laya Desktop: local model gateway")
    parser.add_argument("--version", "-V", action="version", version=_version_text())
    parser.add_argument("--self-test", action="store_true",
                        help="start the engine with the built-in model, answer one chat, open the window offscreen, exit")
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("gui", help="the desktop app (default)")
    _add_config(p, help="models.yaml to use (default: the one in the user's config folder)")
    p.add_argument("--screenshot", metavar="DIR", default=None,
                   help="save a picture of each panel into DIR, then quit")
    p.add_argument("--quit-after", metavar="SECONDS", type=float, default=None,
                   help="quit after this many seconds from launch (a hard deadline)")
    p.add_argument("--lang", default=None, metavar="LANG",
                   help="interface language for this run: en, zh_CN or system "
                        "(default: View > Language, else $LAYA_LANG, else the system locale)")

    p = sub.add_parser("serve", help="run the engine headless")
    _add_config(p)
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=None)
    p.add_argument("--log-dir", default=None, metavar="DIR",
                   help="write engine.log and runners.log (rotated) into DIR instead of stderr")
    p.add_argument("--parent-pipe", type=int, default=None, metavar="FD",
                   help="shut down when this inherited pipe's write end closes (the app that "
                        "started the engine is gone, even when killed)")

    p = sub.add_parser("check", help="validate and lint models.yaml")
    _add_config(p)

    p = sub.add_parser("route", help="which rule and model would serve a prompt, and why")
    _add_config(p)
    p.add_argument("--tag", action="append", default=[], dest="tags")
    p.add_argument("--model", default=None)
    p.add_argument("--path", default="/v1/chat/completions")
    p.add_argument("--json", action="store_true")
    p.add_argument("prompt")

    p = sub.add_parser("bench", help="benchmarks")
    bench_sub = p.add_subparsers(dest="bench_command", required=True)
    b = bench_sub.add_parser("route", help="routing decision latency")
    b.add_argument("--rules", type=int, default=100)
    b.add_argument("--requests", type=int, default=20000)
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--json", action="store_true")

    p = sub.add_parser("loadtest", help="load-test a running engine")
    p.add_argument("--url", required=True, help="server root (a trailing /v1 is accepted)")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--requests", type=int, default=40)
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--prompts", default=None, help="file with one prompt per line, or .jsonl")
    p.add_argument("--tag", action="append", default=[], dest="tags")
    p.add_argument("--model", default="auto")
    p.add_argument("--api-key", default=None)
    p.add_argument("--stream", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--json", action="store_true")
    from laya_desktop.loadtest.cli import add_arguments as _loadtest_arguments
    _loadtest_arguments(p)

    p = sub.add_parser("models", help="model files")
    models_sub = p.add_subparsers(dest="models_command", required=True)
    m = models_sub.add_parser("inspect", help="GGUF metadata and the memory estimate")
    m.add_argument("file")
    m.add_argument("--n-ctx", type=int, default=4096)
    m.add_argument("--parallel", type=int, default=4)
    m.add_argument("--kv-cache-type", default="f16", choices=["f16", "q8_0", "q4_0"])
    m.add_argument("--json", action="store_true")
    from laya_desktop.hub import pull_cli as _hub_args
    _hub_args.add_search_arguments(models_sub.add_parser(
        "search", help="search Hugging Face for GGUF (or MLX) repositories"))
    _hub_args.add_pull_arguments(sub.add_parser(
        "pull", help="download a model from Hugging Face and add it to models.yaml"))

    _add_engine_commands(sub)
    _add_launch_command(sub)

    p = sub.add_parser("_runner", help=argparse.SUPPRESS)
    p.add_argument("--backend", required=True)
    p.add_argument("--spec", required=True, help="JSON model spec")
    return parser


def _skip_httpx_cli() -> None:
    """httpx imports its own command-line tool (rich, click, pygments: a quarter of a second on
    2 busy CPUs) whenever those are installed, and Laya never runs it. A None in sys.modules makes
    that import fail, and httpx then keeps its stub `main`."""
    sys.modules.setdefault("httpx._main", None)


def main(argv: list[str] | None = None) -> int:
    _skip_httpx_cli()
    argv = sys.argv[1:] if argv is None else argv
    passthrough = None
    if argv[:1] == ["launch"] and "--" in argv:
        # the client's own arguments, untouched (argparse would read their options as ours)
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1:]
    args = build_parser().parse_args(argv)
    if passthrough is not None:
        args.client_args = [*args.client_args, *passthrough]
    if args.self_test:
        from laya_desktop.self_test import run_self_test
        return run_self_test(args)
    command = args.command or "gui"
    if command == "gui":
        if args.command is None:
            args = build_parser().parse_args(["gui", *argv])
        from laya_desktop.gui.app import run_gui
        return run_gui(args)
    if command == "serve":
        from laya_desktop.engine.serve import run_serve
        return run_serve(args)
    if command == "check":
        from laya_desktop.routing.check import run_check
        return run_check(args)
    if command == "route":
        from laya_desktop.routing.cli import run_route
        return run_route(args)
    if command == "bench":
        from laya_desktop.routing.bench import run_bench_route
        return run_bench_route(args)
    if command == "loadtest":
        from laya_desktop.loadtest.cli import run_loadtest
        return run_loadtest(args)
    if command == "models" and args.models_command == "search":
        from laya_desktop.hub.pull_cli import run_search
        return run_search(args)
    if command == "pull":
        from laya_desktop.hub.pull_cli import run_pull
        return run_pull(args)
    if command == "models":
        from laya_desktop.runners.inspect_cli import run_inspect
        return run_inspect(args)
    if command == "launch":
        from laya_desktop.control.launch import run_launch
        return run_launch(args)
    if command in ("ps", "load", "unload"):
        from laya_desktop.control import commands
        return {"ps": commands.run_ps, "load": commands.run_load,
                "unload": commands.run_unload}[command](args)
    if command == "_runner":
        from laya_desktop.runners.runner_main import run_runner
        return run_runner(args)
    raise AssertionError(command)
