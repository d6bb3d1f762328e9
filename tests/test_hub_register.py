"""A finished download joins models.yaml: settings from its GGUF metadata and the estimate,
comments kept, a rule on request; a config that would be invalid is refused and the file kept."""
from __future__ import annotations

from pathlib import Path

import pytest

from gguf_factory import write_tiny_gguf
from laya_desktop.config.store import load_config
from laya_desktop.hub.fit import Machine
from laya_desktop.hub.register import model_name_for, register_download, with_model

ROOMY = Machine(ram_available=64 << 30)
REPO_CONFIG = Path(__file__).resolve().parent.parent / "models.yaml"


@pytest.fixture
def config(tmp_path) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(REPO_CONFIG.read_text())
    return path


@pytest.fixture(scope="module")
def gguf(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("dl") / "acme" / "Tiny-GGUF"
    folder.mkdir(parents=True)
    return write_tiny_gguf(folder / "Tiny-Coder-Q8_0.gguf", n_ctx_train=2048,
                           chat_template="{% for m in messages %}{{ m.content }}{% endfor %}")


def test_settings_come_from_the_gguf_and_comments_stay(config, gguf):
    before = config.read_text()
    name, notes = register_download(config, gguf, machine=ROOMY)
    assert name == "tiny-coder-q8_0"
    model = load_config(config).model(name)
    assert (model.backend, model.path, model.n_ctx, model.parallel, model.n_gpu_layers) == \
        ("llama_cpp", str(gguf), 2048, 4, 0)  # n_ctx: the model's own 2048 (under 8192)
    assert any(n.startswith("fits") for n in notes)
    assert "chat template: the GGUF's own" in notes
    after = config.read_text()
    comments = [line.split("#", 1)[1] for line in before.splitlines() if "#" in line]
    assert all(c in after for c in comments)
    assert after.startswith(before.split("\nmodels:")[0])


def test_a_gpu_that_takes_the_model_gets_every_layer(config, gguf):
    gpu = Machine(ram_available=64 << 30, vram_free=8 << 30, vram_total=8 << 30, gpu_name="RTX")
    name, notes = register_download(config, gguf, machine=gpu)
    assert load_config(config).model(name).n_gpu_layers == -1
    assert "all layers on RTX" in notes


def test_a_small_machine_gets_a_smaller_context(config, tmp_path):
    big_ctx = write_tiny_gguf(tmp_path / "long-Q8_0.gguf", n_ctx_train=32768)
    from laya_desktop.hub.fit import judge_info
    from laya_desktop.runners.gguf_info import read_gguf_info
    at_2k = judge_info(read_gguf_info(big_ctx), n_ctx=2048, parallel=4, machine=ROOMY, reserved=0)
    # room for 2048 tokens x 4 and not for 4096 (the KV of 2048 more tokens x 4 is 2 MiB)
    small = Machine(ram_available=at_2k.needed_bytes + (2 << 30) + (1 << 20))
    name, notes = register_download(config, big_ctx, machine=small)
    assert load_config(config).model(name).n_ctx == 2048
    assert notes[0].startswith("tight")


def test_use_for_rule_retargets_or_adds_a_rule(config, gguf):
    name, _ = register_download(config, gguf, rule="agents", machine=ROOMY)
    routes = {r.name: r for r in load_config(config).routes}
    assert routes["agents"].target == name
    assert routes["agents"].fallback[0] == "smollm2-135m"  # the old target stays as a fallback
    # pulled again: the same entry, now behind one more rule
    second, notes = register_download(config, gguf, rule="coding", machine=ROOMY)
    assert second == name and notes == [f"already in models.yaml as {name!r}"]
    assert [m.name for m in load_config(config).models].count(name) == 1
    cfg = load_config(config)
    names = [r.name for r in cfg.routes]
    coding = cfg.routes[names.index("coding")]
    assert coding.target == second and coding.match.tags == ["coding"]
    assert names.index("coding") < names.index("default")  # before the catch-all


def test_new_default_rule_is_a_catch_all_at_the_end():
    config = {"models": [{"name": "a", "backend": "llama_cpp", "path": "/x.gguf"}],
              "routes": [{"name": "code", "target": "a", "match": {"tags": ["code"]}}]}
    out = with_model(config, {"name": "b", "backend": "llama_cpp", "path": "/y.gguf"}, "default")
    assert out["routes"][-1] == {"name": "default", "target": "b"}
    assert config["routes"] == [{"name": "code", "target": "a", "match": {"tags": ["code"]}}]


def test_a_name_already_taken_is_refused_and_the_file_is_unchanged(config, gguf):
    before = config.read_text()
    with pytest.raises(ValueError, match="already has a model named 'gemma-270m'"):
        register_download(config, gguf, name="gemma-270m", machine=ROOMY)
    with pytest.raises(ValueError, match=r"models\[\d+\]\.n_ctx"):
        register_download(config, gguf, n_ctx=8, machine=ROOMY)  # under the schema's minimum
    assert config.read_text() == before


def test_names_are_short_and_unique():
    taken = {"qwen2.5-coder-7b-instruct-q4_k_m"}
    path = Path("/m/Qwen2.5-Coder-7B-Instruct-Q4_K_M-00001-of-00003.gguf")
    assert model_name_for(path, set()) == "qwen2.5-coder-7b-instruct-q4_k_m"
    assert model_name_for(path, taken) == "qwen2.5-coder-7b-instruct-q4_k_m-2"


def test_the_models_folder_is_configurable_and_never_the_config_folder(tmp_path, monkeypatch):
    from laya_desktop.config.store import parse_config_text
    from laya_desktop.hub.folders import ENV, default_models_dir, models_dir
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv(ENV, raising=False)
    base = REPO_CONFIG.read_text()
    assert models_dir(None) == default_models_dir() == tmp_path / "data" / "laya" / "models"
    config, errors = parse_config_text(base.replace("server:\n", f"server:\n  models_dir: {tmp_path}/m\n", 1))
    assert errors == [] and models_dir(config) == tmp_path / "m"
    monkeypatch.setenv(ENV, str(tmp_path / "env"))
    assert models_dir(None) == tmp_path / "env"
    _, errors = parse_config_text(base.replace("server:\n", "server:\n  models_dir: models\n", 1))
    assert [(e.path, e.message) for e in errors] == [
        ("server.models_dir", "expected an absolute folder path (or one starting with ~), got 'models'")]
    inside, _ = parse_config_text(base.replace(
        "server:\n", f"server:\n  models_dir: {tmp_path}/cfg/laya/models\n", 1))
    with pytest.raises(ValueError, match="inside the config folder"):
        models_dir(inside)
