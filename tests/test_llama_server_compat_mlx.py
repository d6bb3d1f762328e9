"""llama-server's request fields on an MLX model: what MLX cannot honour is refused by
name, on the real engine with a tiny MLX model; the hints that change nothing pass."""
from __future__ import annotations

import pytest

from engine_harness import running_engine
from installed import requires

pytestmark = requires("mlx_lm")
HI = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def mlx_engine(tmp_path_factory):
    from mlx_factory import write_tiny_mlx_model
    folder = write_tiny_mlx_model(tmp_path_factory.mktemp("mlx") / "tiny-mlx")
    config = {"models": [{"name": "tiny-mlx", "backend": "mlx", "path": str(folder),
                          "n_ctx": 2048, "idle_ttl_s": 0}],
              "routes": [{"name": "default", "target": "tiny-mlx"}]}
    with running_engine(config, tmp_path_factory.mktemp("engine"),
                        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}) as eng:
        yield eng


@pytest.mark.parametrize("extra,named", [
    ({"json_schema": {"type": "object"}}, "'json_schema'"),
    ({"response_format": {"type": "json_object", "schema": {"type": "object"}}}, "'response_format'"),
    ({"dry_multiplier": 0.5}, "'dry_multiplier'"),
    ({"n": 2}, "'n'"),   # MLX serves one sequence at a time
    ({"grammar": "root ::= \"a\""}, "'grammar'"),
    ({"cache_prompt": False}, "'cache_prompt'"),
])
def test_mlx_refuses_what_it_cannot_honour_by_name(mlx_engine, extra, named):
    with mlx_engine.client() as c:
        reply = c.post("/chat/completions", json={"messages": HI, "max_tokens": 2, **extra})
    assert reply.status_code == 400, reply.text
    assert named in reply.json()["error"]["message"]


def test_mlx_takes_the_hints_and_sends_timings(mlx_engine):
    with mlx_engine.client() as c:
        reply = c.post("/v1/chat/completions", json={
            "messages": HI, "max_tokens": 3, "cache_prompt": True, "id_slot": -1, "min_p": 0.1})
    assert reply.status_code == 200, reply.text
    assert reply.json()["timings"]["predicted_n"] == 3
