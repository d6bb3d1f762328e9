"""`laya route` and `laya bench route` as a user runs them: a real process, a real models.yaml."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = """
models:
  - {name: small, backend: openai, base_url: "http://127.0.0.1:9/v1"}
  - {name: big, backend: openai, base_url: "http://127.0.0.1:9/v1"}
routes:
  - name: code
    match: {tags: [code]}
    target: big
  - name: sql
    match: {keywords: [SELECT, join]}
    target: big
  - name: default
    target: small
    fallback: [big]
"""


def laya(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "laya_desktop", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(CONFIG)
    return path


def test_route_json_explains_earlier_rules(config_file):
    result = laya("route", "--config", str(config_file), "--json", "please Select * from t")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["rule"] == "sql" and out["target"] == "big" and out["fallbacks"] == []
    assert out["direct"] is False and out["decision_us"] >= 0
    assert out["explanation"][0] == {"rule": "code", "matched": False,
                                     "reasons": ["no tag of [code] in request tags []"]}
    assert out["explanation"][1]["matched"] is True


def test_route_text_with_tag(config_file):
    result = laya("route", "--config", str(config_file), "--tag", "code", "hello")
    assert result.returncode == 0, result.stderr
    assert "rule:      code" in result.stdout and "target:    big" in result.stdout
    assert "2 later rules not consulted" in result.stdout


def test_route_text_names_fallbacks_and_reasons(config_file):
    result = laya("route", "--config", str(config_file), "hello")
    assert result.returncode == 0, result.stderr
    assert "fallbacks: big" in result.stdout
    assert "sql: no match (keywords [SELECT, join] not found in user text)" in result.stdout


def test_route_registered_model_is_direct(config_file):
    result = laya("route", "--config", str(config_file), "--model", "small", "--json", "x")
    out = json.loads(result.stdout)
    assert result.returncode == 0
    assert (out["rule"], out["target"], out["direct"], out["explanation"]) == (
        None, "small", True, [])


def test_route_no_match_exits_1_with_json(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(CONFIG.split("  - name: default")[0])
    result = laya("route", "--config", str(path), "--model", "gpt-4o", "--json", "hello")
    assert result.returncode == 1
    out = json.loads(result.stdout)
    assert out["rule"] is None and out["target"] is None
    assert "no rule matches" in result.stderr and "404" in result.stderr


def test_route_invalid_config(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(CONFIG.replace("target: big\n  - name: sql", "target: nope\n  - name: sql"))
    result = laya("route", "--config", str(path), "hello")
    assert result.returncode == 1
    assert "routes[0].target" in result.stderr


def test_bench_route_json():
    result = laya("bench", "route", "--rules", "30", "--requests", "400", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out) == {"rules", "requests", "p50_us", "p95_us", "p99_us"}
    assert (out["rules"], out["requests"]) == (30, 400)
    assert 0 < out["p50_us"] <= out["p95_us"] <= out["p99_us"]
    assert "p50 us" in result.stderr  # the table goes to stderr
