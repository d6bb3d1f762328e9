"""An MLX model folder served through the engine: chat, stream, completion, cancel, unload."""
from __future__ import annotations

import time

import openai
import pytest

from engine_harness import running_engine
from installed import requires

pytestmark = requires("mlx_lm")

# Room for minutes of generation: a cancel that does not reach the runner shows as a busy slot.
N_CTX = 32768


@pytest.fixture(scope="module")
def mlx_engine(tmp_path_factory):
    from mlx_factory import write_tiny_mlx_model
    folder = write_tiny_mlx_model(tmp_path_factory.mktemp("mlx") / "tiny-mlx")
    config = {"models": [{"name": "tiny-mlx", "backend": "mlx", "path": str(folder),
                          "n_ctx": N_CTX, "idle_ttl_s": 0}],
              "routes": [{"name": "default", "target": "tiny-mlx"}]}
    with running_engine(config, tmp_path_factory.mktemp("engine"),
                        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}) as eng:
        yield eng


def test_chat_stream_and_completion(mlx_engine):
    sdk = openai.OpenAI(base_url=mlx_engine.url + "/v1", api_key="unused", max_retries=0)
    reply = sdk.chat.completions.create(model="auto", max_tokens=6, temperature=0,
                                        messages=[{"role": "user", "content": "hello"}])
    assert reply.model == "tiny-mlx" and reply.usage.completion_tokens == 6
    chunks = list(sdk.chat.completions.create(
        model="tiny-mlx", max_tokens=5, stream=True, temperature=0,
        messages=[{"role": "user", "content": "hello"}], stream_options={"include_usage": True}))
    assert chunks[-1].usage.completion_tokens == 5
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == reply.choices[0].message.content[:len(text)]
    done = sdk.completions.create(model="tiny-mlx", prompt="the cat", max_tokens=4)
    assert done.usage.completion_tokens == 4


def test_cancel_frees_and_unload_ends_runner(mlx_engine):
    with mlx_engine.client() as c:
        # no max_tokens: the generation runs to n_ctx (32k tokens, minutes here) unless cancelled
        body = {"model": "tiny-mlx", "stream": True,
                "messages": [{"role": "user", "content": "go on"}]}
        with c.stream("POST", "/v1/chat/completions", json=body) as r:
            lines = r.iter_lines()
            next(lines)
            next(lines)
            pid = c.get("/admin/models").json()["models"][0]["pid"]
        left = time.monotonic()
        while c.get("/admin/models").json()["models"][0]["active"]:
            assert time.monotonic() - left < 5, "the runner still generates for a client that left"
            time.sleep(0.05)
        # the runner's one slot is free: a short request is answered at once, by the same runner
        started = time.monotonic()
        short = c.post("/v1/chat/completions", json={"model": "tiny-mlx", "max_tokens": 2,
                                                    "messages": [{"role": "user", "content": "x"}]})
        assert short.status_code == 200 and time.monotonic() - started < 5
        assert c.get("/admin/models").json()["models"][0]["pid"] == pid
        deadline = time.monotonic() + 5
        while True:  # the sample taken while the model was loading has no runner figures yet
            stats = c.get("/admin/telemetry").json()["samples"][-1]["models"]["tiny-mlx"]
            if stats["kv_capacity_tokens"] is not None and "mlx_active_memory" in stats:
                break
            assert time.monotonic() < deadline, stats
            time.sleep(0.1)
        assert stats["kv_capacity_tokens"] == N_CTX
        assert c.post("/admin/models/tiny-mlx/unload").json()["unloaded"]
        assert pid not in mlx_engine.runner_pids()


def test_tools_render_and_grammar_fields_are_refused_by_name(mlx_engine):
    sdk = openai.OpenAI(base_url=mlx_engine.url + "/v1", api_key="unused", max_retries=0)
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}
    messages = [{"role": "user", "content": "weather in Paris?"}]
    auto = sdk.chat.completions.create(model="tiny-mlx", max_tokens=4, messages=messages, tools=[tool])
    bare = sdk.chat.completions.create(model="tiny-mlx", max_tokens=4, messages=messages)
    assert auto.usage.prompt_tokens > bare.usage.prompt_tokens   # the tools reached the prompt
    for extra, field in (({"tools": [tool], "tool_choice": "required"}, "'tool_choice'"),
                         ({"response_format": {"type": "json_object"}}, "'response_format'"),
                         ({"logprobs": True}, "'logprobs'")):
        with pytest.raises(openai.BadRequestError) as info:
            sdk.chat.completions.create(model="tiny-mlx", max_tokens=4, messages=messages, **extra)
        assert field in info.value.message
