"""Seconds from launching the AppImage to its main window being mapped, on a private Xvfb display.

    python packaging/measure_startup.py dist/Laya-*.AppImage [--runs 3] [--extract-and-run]

Needs Xvfb, xdotool and xdpyinfo (apt-get install xvfb xdotool x11-utils). The app runs with a
throw-away models.yaml on a free port and HOME, so it neither meets a running Laya nor touches
the user's config.
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

TITLE = "Laya Desktop"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_xvfb() -> tuple[subprocess.Popen, int]:
    """Xvfb on a free display number, once a client can talk to it (other Xvfbs may be running)."""
    for display in random.sample(range(100, 1000), 20):
        if Path(f"/tmp/.X{display}-lock").exists():
            continue
        # -noreset: an X server resets when its last client leaves, refusing connections meanwhile
        xvfb = subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", "1280x1024x24", "-noreset",
                                 "-nolisten", "tcp"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while xvfb.poll() is None and time.monotonic() < deadline:
            if subprocess.run(["xdpyinfo", "-display", f":{display}"], capture_output=True).returncode == 0:
                return xvfb, display
            time.sleep(0.1)
        xvfb.kill()
        xvfb.wait()
    raise RuntimeError("could not start Xvfb")


def window_visible(env: dict) -> bool:
    r = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", TITLE], env=env,
                       capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() != ""


def one_run(appimage: Path, extract: bool, env: dict, timeout_s: float) -> float:
    with tempfile.TemporaryDirectory(prefix="laya-startup-") as tmp:
        config = Path(tmp) / "models.yaml"
        config.write_text("server: {host: 127.0.0.1, port: %d}\n"
                          "models:\n  - {name: chat, backend: llama_cpp, path: 'builtin:smollm2-135m-instruct'}\n"
                          "routes:\n  - {name: default, target: chat}\n" % free_port())
        run_env = dict(env, HOME=tmp, XDG_CONFIG_HOME=f"{tmp}/config", XDG_STATE_HOME=f"{tmp}/state",
                       XDG_CACHE_HOME=os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")))
        args = [str(appimage)] + (["--appimage-extract-and-run"] if extract else [])
        started = time.monotonic()
        log = open(Path(tmp) / "app.log", "w+")
        proc = subprocess.Popen(args + ["gui", "--config", str(config)], env=run_env,
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            while time.monotonic() - started < timeout_s:
                if window_visible(run_env):
                    return time.monotonic() - started
                if proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"the app exited with status {proc.returncode}:\n"
                                       + log.read()[-2000:])
                time.sleep(0.02)
            raise RuntimeError(f"no window within {timeout_s} s")
        finally:
            proc.send_signal(signal.SIGTERM)  # closes the window; the app stops its engine
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("appimage", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--extract-and-run", action="store_true")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    xvfb, display = start_xvfb()
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env["DISPLAY"] = f":{display}"
    try:
        times = [one_run(args.appimage.resolve(), args.extract_and_run, env, args.timeout)
                 for _ in range(args.runs)]
    finally:
        xvfb.terminate()
        xvfb.wait()
    if args.appimage.suffix != ".AppImage":
        mode = "the unpacked bundle"
    else:
        mode = "extract-and-run" if args.extract_and_run else "mounted (FUSE)"
    print(f"{mode}: launch to visible window " + ", ".join(f"{t:.2f}" for t in times) + " s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
