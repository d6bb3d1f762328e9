"""What the engine loads before /healthz can answer: the libraries its first answer does not need
stay out of `laya serve`'s start-up until something uses them (docs/performance.md, "Start-up")."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "docs" / "demo-models.yaml"

# Each one's user imports it on first use: the GGUF memory estimate and semantic rules (numpy,
# gguf), the telemetry sampler's worker (pynvml, psutil), the comment-keeping save (ruamel), the
# first event, request or scrape (prometheus_client).
DEFERRED = ("numpy", "gguf", "pynvml", "psutil", "ruamel.yaml", "prometheus_client")

# What run_serve does before uvicorn starts: parse the command line, load the config, build the
# engine and its app.
BUILD_THE_ENGINE = """
import json, sys
from laya_desktop.cli import build_parser, _skip_httpx_cli
_skip_httpx_cli()
args = build_parser().parse_args(["serve", "--config", sys.argv[1]])
from laya_desktop.config.store import load_config
from laya_desktop.engine.app import create_app
from laya_desktop.engine.core import Engine
import laya_desktop.engine.serve
create_app(Engine(load_config(args.config)))
print(json.dumps([m for m in json.loads(sys.argv[2]) if m in sys.modules]))
"""


def test_building_the_engine_loads_none_of_the_deferred_libraries():
    done = subprocess.run([sys.executable, "-c", BUILD_THE_ENGINE, str(DEMO), json.dumps(DEFERRED)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
