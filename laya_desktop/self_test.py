"""`laya --self-test`: prove that an installed (frozen) app works, end to end, in a minute.

It starts the engine as a child with a throw-away config that serves the built-in model, answers
one chat request through it (so a runner is spawned the way a frozen build spawns it), then
creates the main window offscreen against that engine. Exit 0, or 1 with the step that failed and
the engine's log tail. Qt is imported only inside the window step (laya_desktop/gui/).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

MODEL = "self-test"
HEALTH_TIMEOUT_S = 60.0
CHAT_TIMEOUT_S = 240.0  # the first run assembles the built-in model into the user's cache
WINDOW_TIMEOUT_S = 60.0


class SelfTestError(Exception):
    pass


def laya_command(*args: str) -> list[str]:
    """The command line that runs `laya ARGS`: the frozen executable itself, or python -m."""
    if getattr(sys, "frozen", False):
        return [sys.executable, *args]
    return [sys.executable, "-m", "laya_desktop", *args]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(folder: Path, port: int, model_path: str) -> Path:
    path = folder / "models.yaml"
    path.write_text(
        "server: {host: 127.0.0.1, port: %d}\n"
        "models:\n"
        "  - {name: %s, backend: llama_cpp, path: '%s', n_ctx: 512, parallel: 1, n_threads: 1}\n"
        "routes:\n"
        "  - {name: default, target: %s}\n"
        "memory: {guard: false}\n" % (port, MODEL, model_path, MODEL), "utf-8")
    return path


class Engine:
    """`laya serve` as our child, in its own session so that its runners go down with it."""

    def __init__(self, config: Path, port: int, log_path: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(laya_command("serve", "--config", str(config)),
                                         stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SelfTestError(f"the engine exited with status {self.proc.returncode}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise SelfTestError(f"the engine was not healthy within {timeout_s:.0f} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # runners it failed to stop
        except OSError:
            pass
        self.proc.wait(timeout=5)

    def log_tail(self, max_bytes: int = 3000) -> str:
        try:
            return self.log_path.read_bytes()[-max_bytes:].decode("utf-8", "replace")
        except OSError:
            return ""


def event_loop_of(pid: int) -> str:
    """"uvloop" when the engine process has uvloop's extension mapped, else "asyncio". A frozen
    build that left uvloop out still serves, on asyncio's slower loop; this tells."""
    import psutil

    mapped = (m.path for m in psutil.Process(pid).memory_maps(grouped=True))
    return "uvloop" if any(os.sep + "uvloop" + os.sep in path for path in mapped) else "asyncio"


def check_event_loop(engine: Engine) -> str:
    import importlib.util

    loop = event_loop_of(engine.proc.pid)
    if importlib.util.find_spec("uvloop") is not None and loop != "uvloop":
        raise SelfTestError("uvloop is installed but the engine runs asyncio's event loop")
    return loop


def chat_once(url: str) -> str:
    body = {"model": MODEL, "max_tokens": 8, "temperature": 0,
            "messages": [{"role": "user", "content": "Say hello."}]}
    r = httpx.post(url + "/v1/chat/completions", json=body, timeout=CHAT_TIMEOUT_S)
    if r.status_code != 200:
        raise SelfTestError(f"chat answered {r.status_code}: {r.text[:300]}")
    data = r.json()
    text = data["choices"][0]["message"].get("content")
    if not isinstance(text, str) or data.get("usage", {}).get("completion_tokens", 0) < 1:
        raise SelfTestError(f"chat answered without generated text: {r.text[:300]}")
    return text


def resolve_builtins() -> str:
    """Every built-in model resolves to a file: the bundle carries them all."""
    from laya_desktop.runners.builtin import BUILTIN_MODELS, BUILTIN_PREFIX, resolve_model_path

    sizes = []
    for name in BUILTIN_MODELS:
        path = resolve_model_path(BUILTIN_PREFIX + name)
        sizes.append(f"{name} {path.stat().st_size / 2**20:.0f} MiB")
    return ", ".join(sizes)


def find_app_files() -> str:
    """The licences and the icon that the About box and the window show are where they look."""
    from laya_desktop.app_files import ICON_SVG, LICENSE, THIRD_PARTY_NOTICES, find_app_file

    missing = [name for name in (LICENSE, THIRD_PARTY_NOTICES, ICON_SVG) if find_app_file(name) is None]
    if missing:
        raise SelfTestError("missing from the install: " + ", ".join(missing))
    return f"{LICENSE}, {THIRD_PARTY_NOTICES}, {ICON_SVG}"


def keyword_scanner() -> str:
    """The router's keyword scanner here. A bundle must carry keyscan, Laya's C extension (the
    build it is made from compiled it); from source it is optional (no compiler: hyperscan)."""
    from laya_desktop.routing.router import make_scanner

    scanner = make_scanner([b"laya"])
    if scanner.scan(b"hello LAYA") != [0]:
        raise RuntimeError(f"{scanner.name} did not find a keyword")
    if getattr(sys, "frozen", False) and scanner.name != "keyscan":
        raise RuntimeError(f"the bundle lacks laya_desktop.routing._keyscan (the router uses {scanner.name})")
    return scanner.name


def hub_client() -> str:
    """The model downloads' client (huggingface_hub) is here: a bundle that left it out could
    search nothing. Imported only, nothing is asked of the hub."""
    import huggingface_hub

    from laya_desktop.hub import client, transfer  # noqa: F401
    return f"huggingface_hub {huggingface_hub.__version__}"


def run_self_test(args=None, model_path: str = "builtin:smollm2-135m-instruct") -> int:
    started = time.monotonic()

    def report(step: str, t0: float, detail: str = "") -> None:
        sys.stderr.write(f"self-test: {step} ok ({time.monotonic() - t0:.1f} s){detail}\n")

    with tempfile.TemporaryDirectory(prefix="laya-self-test-") as tmp:
        folder = Path(tmp)
        port = free_port()
        config = write_config(folder, port, model_path)
        engine = None
        step = "app files"
        try:
            t0 = time.monotonic()
            report(step, t0, f": {find_app_files()}")
            step, t0 = "built-in models", time.monotonic()
            report(step, t0, f": {resolve_builtins()}")
            step, t0 = "keyword scanner", time.monotonic()
            report(step, t0, f": {keyword_scanner()}")
            step, t0 = "hub client", time.monotonic()
            report(step, t0, f": {hub_client()}")
            step, t0 = "engine start", time.monotonic()
            engine = Engine(config, port, folder / "engine.log")
            engine.wait_healthy(HEALTH_TIMEOUT_S)
            report(step, t0, f": {check_event_loop(engine)} event loop")
            step, t0 = "chat", time.monotonic()
            text = chat_once(engine.url)
            report(step, t0, f": {text.strip()[:60]!r}")
            step, t0 = "main window", time.monotonic()
            from laya_desktop.gui.self_test_window import check_main_window
            check_main_window(str(config), "127.0.0.1", port, WINDOW_TIMEOUT_S)
            report(step, t0)
        except Exception as exc:  # noqa: BLE001 - every failure is reported, with its step
            sys.stderr.write(f"self-test FAILED at {step}: {exc}\n")
            if engine is not None:
                sys.stderr.write("--- engine log (tail) ---\n" + engine.log_tail() + "\n")
            return 1
        finally:
            if engine is not None:
                engine.stop()
    sys.stderr.write(f"self-test passed in {time.monotonic() - started:.1f} s\n")
    return 0
