"""`laya ps` / `load` / `unload` against a real engine process on a tiny GGUF."""
from __future__ import annotations

import json

import pytest
import yaml

from engine_harness import EngineProcess, free_port
from laya_desktop.cli import main
from laya_desktop.telemetry.model_sample import ModelState

KEY = "sekrit-test-key"


@pytest.fixture(scope="module")
def engine(tiny_gguf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("control")
    config = {
        "server": {"host": "127.0.0.1", "port": 0, "api_key": KEY},
        "models": [{"name": "tiny", "backend": "llama_cpp", "path": str(tiny_gguf), "n_ctx": 256,
                    "parallel": 2, "idle_ttl_s": 0}],
        "routes": [{"name": "default", "target": "tiny"}],
    }
    eng = EngineProcess(config, folder)
    # The CLI finds the engine through the config's server section, as a user's would.
    config["server"]["port"] = eng.port
    eng.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    eng.start()
    try:
        yield eng
    finally:
        eng.stop()


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_no_engine_is_a_clear_error(capsys):
    url = f"http://127.0.0.1:{free_port()}"
    code, out, err = run(capsys, "ps", "--url", url)
    assert code == 1 and out == ""
    assert f"no engine answers at {url}" in err and "laya serve" in err
    code, out, _ = run(capsys, "load", "tiny", "--url", url + "/v1", "--json")
    assert code == 1
    assert json.loads(out)["error"] == {"message": json.loads(out)["error"]["message"],
                                        "code": "engine_unreachable", "url": url}


def test_load_ps_unload(engine, capsys):
    cfg = str(engine.config_path)
    code, out, _ = run(capsys, "ps", "--config", cfg, "--json")
    assert code == 0 and json.loads(out)["models"] == []

    code, out, _ = run(capsys, "load", "tiny", "--config", cfg)
    assert code == 0 and out.startswith("loaded tiny in ")

    code, out, _ = run(capsys, "ps", "--config", cfg, "--json")
    rows = json.loads(out)["models"]
    assert [r["name"] for r in rows] == ["tiny"] and ModelState(rows[0]["state"]).loaded
    code, out, _ = run(capsys, "ps", "--config", cfg)
    header, line = out.splitlines()
    assert header.split()[:3] == ["NAME", "STATE", "PID"]
    assert line.split()[0] == "tiny" and str(rows[0]["pid"]) in line.split()

    code, out, _ = run(capsys, "unload", "tiny", "--config", cfg)
    assert code == 0 and out.strip() == "unloaded tiny"
    code, out, err = run(capsys, "ps", "--config", cfg)
    assert code == 0 and out == "" and "no models loaded" in err
    code, out, _ = run(capsys, "ps", "--config", cfg, "--all", "--json")
    assert [r["name"] for r in json.loads(out)["models"]] == ["tiny"]


def test_engine_errors_are_reported(engine, capsys):
    cfg = str(engine.config_path)
    code, _, err = run(capsys, "load", "no-such-model", "--config", cfg)
    assert code == 1 and "no-such-model" in err
    code, _, err = run(capsys, "ps", "--url", engine.url, "--api-key", "wrong")
    assert code == 1 and "--api-key" in err
