"""Sampling knobs: one table (config.sampling) for models.yaml's per-model `sampling` defaults, the
request fields and the runner; a model's defaults reach its runner under the request's own values,
and the DRY and repeat_last_n knobs change what llama.cpp samples."""
from __future__ import annotations

import httpx
import pytest

from engine_harness import running_engine
from gguf_factory import write_tiny_gguf
from laya_desktop.config.sampling import KNOBS
from laya_desktop.config.store import config_to_dict
from laya_desktop.config.validate import validate_config
from laya_desktop.engine.dispatch import for_model
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.request_body import chat_call
from laya_desktop.runners.protocol import BadRequest, parse_params


def _config(models: list[dict]) -> dict:
    return {"models": models, "routes": [{"name": "all", "target": models[0]["name"]}]}


def _errors(raw: dict) -> list[str]:
    return [str(e) for e in validate_config(raw)[1]]


# --- models.yaml ---------------------------------------------------------------------------------

def test_a_model_sampling_block_is_validated_with_the_path_of_each_error():
    raw = _config([
        {"name": "a", "backend": "llama_cpp", "path": "a.gguf",
         "sampling": {"repeat_penalty": 1.1, "dry_multiplier": 0.8, "repeat_last_n": -1}},
        {"name": "b", "backend": "mlx", "path": "folder",
         "sampling": {"dry_multiplier": 0.8, "temperature": 3, "top_k": 2.5, "warmth": 1}},
        {"name": "c", "backend": "openai", "base_url": "http://127.0.0.1:9/v1",
         "sampling": {"temperature": 0.2}},
    ])
    errors = _errors(raw)
    assert not [e for e in errors if e.startswith("models[0]")], errors
    assert any(e.startswith("models[1].sampling.dry_multiplier: 'dry_multiplier' does not apply "
                            "to backend 'mlx'") for e in errors), errors
    assert "models[1].sampling.temperature: must be between 0 and 2, got 3" in errors
    assert "models[1].sampling.top_k: must be an integer, got 2.5" in errors
    assert any(e.startswith("models[1].sampling.warmth: unknown key 'warmth'") for e in errors)
    assert any(e.startswith("models[2].sampling: 'sampling' does not apply to backend 'openai'")
               for e in errors), errors


def test_sampling_defaults_survive_a_save_and_an_empty_block_is_not_written():
    raw = _config([{"name": "a", "backend": "llama_cpp", "path": "a.gguf",
                    "sampling": {"repeat_penalty": 1.1}},
                   {"name": "b", "backend": "llama_cpp", "path": "b.gguf"}])
    config, errors = validate_config(raw)
    assert not errors
    saved = config_to_dict(config)["models"]
    assert saved[0]["sampling"] == {"repeat_penalty": 1.1}
    assert "sampling" not in saved[1]


def test_a_rules_sampling_is_validated_against_every_model_it_may_send_to():
    models = [{"name": "gguf", "backend": "llama_cpp", "path": "a.gguf"},
              {"name": "mlx", "backend": "mlx", "path": "folder"}]
    ok = {"models": models, "routes": [
        {"name": "agents", "target": "gguf", "sampling": {"temperature": 0, "dry_multiplier": 0.8}},
        {"name": "all", "target": "mlx", "sampling": {"temperature": 0.1}}]}
    config, errors = validate_config(ok)
    assert not errors, errors
    assert config.routes[0].sampling == {"temperature": 0, "dry_multiplier": 0.8}
    assert config_to_dict(config)["routes"][0]["sampling"] == {"temperature": 0, "dry_multiplier": 0.8}
    plain = validate_config({**ok, "routes": [{"name": "all", "target": "mlx"}]})[0]
    assert "sampling" not in config_to_dict(plain)["routes"][0]   # an empty block is not written

    bad = {"models": models, "routes": [
        {"name": "agents", "target": "gguf", "fallback": ["mlx"],
         "sampling": {"dry_multiplier": 0.8, "temperature": -1, "warmth": 1}},
        {"name": "all", "target": "gguf", "sampling": "cold"}]}
    errors = _errors(bad)
    assert any(e.startswith("routes[0].sampling.dry_multiplier: 'dry_multiplier' does not apply to "
                            "model 'mlx' (backend 'mlx'") for e in errors), errors
    assert "routes[0].sampling.temperature: must be between 0 and 2, got -1" in errors
    assert any(e.startswith("routes[0].sampling.warmth: unknown key 'warmth'") for e in errors)
    assert any(e.startswith("routes[1].sampling: ") for e in errors), errors


# --- one table for the request, the runner and the config ----------------------------------------

def _outside(knob):
    return knob.high + 1 if knob.high is not None else knob.low - 1


@pytest.mark.parametrize("name", sorted(KNOBS))
def test_every_knob_has_the_same_range_in_the_request_and_in_the_runner(name):
    knob = KNOBS[name]
    inside = knob.default
    body = {"messages": [{"role": "user", "content": "hi"}], name: inside}
    assert chat_call(body).command["params"][name] == inside
    assert getattr(parse_params({name: inside}), name) == inside
    bad = _outside(knob)
    with pytest.raises(ApiError) as refused:
        chat_call({**body, name: bad})
    assert refused.value.status == 400 and name in refused.value.message
    with pytest.raises(BadRequest, match=name):
        parse_params({name: bad})


class _Model:
    sampling = {"repeat_penalty": 1.1, "temperature": 0.3}
    max_output_tokens = 50


def test_a_models_defaults_sit_under_the_requests_own_values():
    command = {"kind": "chat", "params": {"temperature": 0.9, "max_tokens": 500}}
    params = for_model(command, _Model)["params"]
    assert params == {"repeat_penalty": 1.1, "temperature": 0.9, "max_tokens": 50}
    assert command["params"] == {"temperature": 0.9, "max_tokens": 500}   # not mutated

    ruled = for_model(command, _Model, {"temperature": 0.0, "top_k": 1})["params"]
    assert ruled == {"repeat_penalty": 1.1, "temperature": 0.9, "top_k": 1, "max_tokens": 50}
    assert for_model({"kind": "chat", "params": {}}, _Model, {"temperature": 0.0})["params"] == \
        {"repeat_penalty": 1.1, "temperature": 0.0, "max_tokens": 50}   # rule over model

    class Plain:
        sampling: dict = {}
        max_output_tokens = None
    untouched = {"kind": "chat", "params": {"max_tokens": 5}}
    assert for_model(untouched, Plain) is untouched


# --- through a real engine and llama.cpp runner --------------------------------------------------

PROMPT = "the the the"


def _texts(url: str, model: str, n: int, **fields) -> list[str]:
    texts = []
    for seed in range(n):
        r = httpx.post(url + "/v1/completions", timeout=60, json={
            "model": model, "prompt": PROMPT, "max_tokens": 24, "seed": seed, **fields})
        assert r.status_code == 200, r.text
        texts.append(r.json()["choices"][0]["text"])
    return texts


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sampling")
    gguf = str(write_tiny_gguf(folder / "tiny.gguf"))
    models = [{"name": "greedy", "backend": "llama_cpp", "path": gguf, "n_ctx": 256, "parallel": 1,
               "sampling": {"temperature": 0.0}},
              {"name": "plain", "backend": "llama_cpp", "path": gguf, "n_ctx": 256, "parallel": 1}]
    config = {"models": models, "routes": [
        {"name": "greedy", "target": "greedy", "match": {"model": ["greedy"]}},
        {"name": "by-rule", "target": "plain", "match": {"model": ["by-rule"]},
         "sampling": {"temperature": 0.0}},
        {"name": "all", "target": "plain"}]}
    with running_engine(config, folder) as eng:
        yield eng


def test_a_models_temperature_default_reaches_its_runner_and_a_request_overrides_it(engine):
    greedy = _texts(engine.url, "greedy", 3)
    assert len(set(greedy)) == 1, greedy                   # temperature 0 from models.yaml
    sampled = _texts(engine.url, "plain", 3)
    assert len(set(sampled)) > 1, sampled                  # the default 0.8 samples
    overridden = _texts(engine.url, "greedy", 3, temperature=1.5)
    assert len(set(overridden)) > 1, overridden            # the request's value wins
    assert _texts(engine.url, "plain", 1, temperature=0) == greedy[:1]


def test_a_rules_sampling_reaches_the_runner_and_a_request_overrides_it(engine):
    ruled = _texts(engine.url, "by-rule", 3)
    assert len(set(ruled)) == 1, ruled                     # temperature 0 from the rule
    assert ruled[:1] == _texts(engine.url, "plain", 1, temperature=0)
    overridden = _texts(engine.url, "by-rule", 3, temperature=1.5)
    assert len(set(overridden)) > 1, overridden


def test_dry_and_the_repeat_look_back_change_what_a_greedy_model_writes(engine):
    plain = _texts(engine.url, "greedy", 1)[0]
    dry = _texts(engine.url, "greedy", 1, dry_multiplier=5.0, dry_allowed_length=1)[0]
    assert dry != plain, plain
    penalised = _texts(engine.url, "greedy", 1, repeat_penalty=5.0, repeat_last_n=-1)[0]
    short_look_back = _texts(engine.url, "greedy", 1, repeat_penalty=5.0, repeat_last_n=1)[0]
    assert penalised != plain and penalised != short_look_back, (plain, penalised, short_look_back)


def test_a_knob_out_of_range_is_a_400_naming_it(engine):
    r = httpx.post(engine.url + "/v1/chat/completions", timeout=30, json={
        "model": "plain", "messages": [{"role": "user", "content": "hi"}], "dry_base": 0.5})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_dry_base" and "dry_base" in r.json()["error"]["message"]
