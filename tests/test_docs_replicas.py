"""Every models.yaml example in docs/replicas.md passes `laya check` as written (a real process),
and the page covers the engines and settings it promises."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

DOC = Path(__file__).resolve().parents[1] / "docs" / "replicas.md"
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)


def examples() -> list[str]:
    return YAML_BLOCK.findall(DOC.read_text(encoding="utf-8"))


def test_the_page_has_the_examples_it_promises():
    blocks = [yaml.safe_load(b) for b in examples()]
    assert len(blocks) >= 4
    backends = {m["backend"] for b in blocks for m in b["models"]}
    strategies = {r.get("strategy") for b in blocks for r in b["routes"]}
    assert backends == {"openai", "llama_cpp"}
    assert {"least_loaded", "min_latency", "weighted", "spillover"} <= strategies
    assert any("health" in m for b in blocks for m in b["models"])
    assert any("affinity" in r for b in blocks for r in b["routes"])
    text = DOC.read_text(encoding="utf-8")
    for engine in ("llama-server", "vLLM", "Ollama", "LM Studio"):
        assert engine in text


@pytest.mark.parametrize("index", range(len(examples())))
def test_each_example_passes_laya_check(index, tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(examples()[index], encoding="utf-8")
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    env.pop("BOX_API_KEY", None)     # as on a fresh desktop: the key is not set yet
    r = subprocess.run([sys.executable, "-m", "laya_desktop", "check", "--config", str(path)],
                       capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "error" not in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
