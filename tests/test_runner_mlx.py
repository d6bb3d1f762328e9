"""The MLX backend on a tiny random Llama written by tests/mlx_factory.py (mlx[cpu], offline).

Most tests drive MlxBackend in-process, stepping it the way runner_main does; one starts the real
runner process when runner_main is there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from installed import requires  # noqa: E402
from laya_desktop.runners.batching import TextStream  # noqa: E402
from laya_desktop.runners.memory_estimate import (  # noqa: E402
    mlx_kv_bytes_per_token as kv_bytes_per_token,
)
from laya_desktop.runners.mlx_backend import MlxBackend  # noqa: E402
from mlx_factory import write_tiny_mlx_model  # noqa: E402
from runner_steps import run, text_of  # noqa: E402

pytestmark = requires("mlx.core", "mlx_lm")

ROOT = Path(__file__).resolve().parents[1]
NO_EOS = {"2": -1e9}  # the factory's EOS id is 2 (specials come first in the vocab)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return write_tiny_mlx_model(tmp_path_factory.mktemp("tiny-mlx"))


@pytest.fixture(scope="module")
def backend(model_dir):
    b = MlxBackend({"name": "t", "path": str(model_dir), "n_ctx": 256, "parallel": 1})
    yield b
    b.close()


def chat(text, **params):
    params.setdefault("temperature", 0)
    return {"op": "generate", "kind": "chat", "messages": [{"role": "user", "content": text}],
            "params": params}


def done_of(events):
    assert events and events[-1]["event"] == "done", events[-3:]
    assert sum(e["event"] == "done" for e in events) == 1
    return events[-1]


# --- pure parts ---


def feed(stream: TextStream, text: str) -> tuple[str, bool]:
    return stream.push_text(text), stream.stopped


def test_stop_filter_holds_back_a_possible_stop():
    f = TextStream(["END", "xy"])   # the stop matcher both backends use, fed text as on MLX
    assert feed(f, "abc E") == ("abc ", False)
    assert feed(f, "N") == ("", False)
    assert feed(f, "D more") == ("", True)
    f = TextStream(["END"])
    assert feed(f, "aE") == ("a", False)
    assert feed(f, "x") == ("Ex", False)
    assert f.flush() == ""
    assert feed(f, "tail E") == ("tail ", False)
    assert f.flush() == "E"
    assert feed(TextStream([]), "E") == ("E", False)


def test_kv_bytes_per_token_from_config():
    cfg = {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "hidden_size": 64}
    assert kv_bytes_per_token(cfg, 2) == 2 * 2 * 16 * 2 * 2
    assert kv_bytes_per_token({"text_config": {**cfg, "head_dim": 32}}, 4) == 2 * 2 * 32 * 2 * 4


# --- in-process backend ---


def test_info_and_stats(backend):
    info = backend.info()
    assert info["n_ctx"] == 256 and info["parallel"] == 1
    assert info["kv_bytes_per_token"] == 2 * 2 * 16 * 2 * 4  # float32 weights
    assert info["kv_capacity_tokens"] == 256
    assert info["chat_format"] == "tokenizer"
    assert info["architecture"] == "llama"
    assert info["batching"] is False
    assert backend._tokenizer.eos_token_ids == {int(next(iter(NO_EOS)))}
    stats = backend.stats()
    for key in ("kv_used_tokens", "kv_capacity_tokens", "kv_bytes_per_token", "active", "queued",
                "tokens_per_s", "mlx_active_memory", "mlx_peak_memory", "mlx_cache_memory"):
        assert key in stats
    assert isinstance(stats["mlx_active_memory"], int) and stats["mlx_active_memory"] > 0


def test_chat_streams_and_stops_at_max_tokens(backend):
    ev = run(backend, chat("Hello there", max_tokens=12))["r0"]
    done = done_of(ev)
    assert done["finish_reason"] == "length"
    assert done["usage"]["completion_tokens"] == 12
    assert done["usage"]["prompt_tokens"] > 3
    assert sum(e["event"] == "token" for e in ev) >= 2  # streamed in deltas
    assert text_of(ev).strip()


def test_prompt_cache_is_reused_across_turns_and_gives_the_same_text(backend, model_dir):
    first = run(backend, chat("Tell me about the fox", max_tokens=10))["r0"]
    reply = text_of(first)
    turn2 = {"op": "generate", "kind": "chat", "params": {"temperature": 0, "max_tokens": 10},
             "messages": [{"role": "user", "content": "Tell me about the fox"},
                          {"role": "assistant", "content": reply},
                          {"role": "user", "content": "And the dog?"}]}
    ev = run(backend, turn2)["r0"]
    usage = done_of(ev)["usage"]
    assert usage["cached_tokens"] >= done_of(first)["usage"]["prompt_tokens"] - 1
    assert usage["cached_tokens"] < usage["prompt_tokens"]

    fresh = MlxBackend({"name": "f", "path": str(model_dir), "n_ctx": 256})
    try:
        ref = run(fresh, turn2)["r0"]
    finally:
        fresh.close()
    assert done_of(ref)["usage"]["cached_tokens"] == 0
    assert text_of(ref) == text_of(ev)


def test_completion_and_eos(backend):
    ev = run(backend, {"op": "generate", "kind": "completion", "prompt": "The quick brown",
                       "params": {"temperature": 0, "max_tokens": 5}})["r0"]
    assert done_of(ev)["finish_reason"] == "length"
    ev = run(backend, {"op": "generate", "kind": "completion", "prompt": "The quick brown",
                       "params": {"max_tokens": 5, "logit_bias": {"2": 1e9}}})["r0"]
    done = done_of(ev)
    assert done["finish_reason"] == "stop" and done["usage"]["completion_tokens"] == 0
    assert text_of(ev) == ""


def test_stop_string_cuts_the_text(backend):
    ref = text_of(run(backend, chat("Memory guards", max_tokens=40))["r0"])
    start = next(i for i in range(4, len(ref) - 3) if ref[i:i + 3].strip() == ref[i:i + 3])
    stop = ref[start:start + 3]
    ev = run(backend, chat("Memory guards", max_tokens=40, stop=["@@never@@", stop]))["r0"]
    assert done_of(ev)["finish_reason"] == "stop"
    assert text_of(ev) == ref[:ref.find(stop)]


def test_sampling_with_seed_is_repeatable(backend):
    params = dict(temperature=1.0, top_p=0.9, top_k=40, min_p=0.01, seed=7, max_tokens=16,
                  repeat_penalty=1.1, presence_penalty=0.5, frequency_penalty=0.5)
    a = text_of(run(backend, chat("Hello", **params))["r0"])
    b = text_of(run(backend, chat("Hello", **params))["r0"])
    assert a == b and a


def test_prompt_longer_than_n_ctx_is_refused(backend):
    ev = backend.submit({**chat("fox " * 400), "id": "long"})
    assert ev[0]["event"] == "error" and ev[0]["code"] == "context_length_exceeded"
    assert not backend.has_work()
    ev = backend.submit({"op": "generate", "id": "bad", "kind": "nonsense"})
    assert ev[0]["code"] == "bad_request"


def test_generation_stops_at_n_ctx(model_dir):
    b = MlxBackend({"name": "s", "path": str(model_dir), "n_ctx": 40})
    try:
        ev = run(b, chat("Hi", logit_bias=NO_EOS))["r0"]  # max_tokens absent: until n_ctx
        usage = done_of(ev)["usage"]
        assert done_of(ev)["finish_reason"] == "length"
        assert usage["prompt_tokens"] + usage["completion_tokens"] == 40
    finally:
        b.close()


def test_cancel_stops_promptly_ends_with_a_cancelled_done_and_emits_nothing_more(backend):
    (queued,) = backend.submit({**chat("Hello", max_tokens=200), "id": "c"})
    assert queued["event"] == "queued" and queued["id"] == "c" and queued["prompt_tokens"] > 0
    seen = []
    while sum(e["event"] == "token" for e in seen) < 2:
        seen += backend.step()
    assert backend.stats()["active"] == 1
    (done,) = backend.cancel("c")   # the contract: every request ends with one done
    assert done["event"] == "done" and done["finish_reason"] == "cancelled"
    assert done["usage"]["completion_tokens"] >= sum(e["event"] == "token" for e in seen) >= 2
    assert not backend.has_work() and backend.step() == []
    assert backend.cancel("c") == []  # unknown ids are ignored
    assert backend.stats()["active"] == 0
    assert done_of(run(backend, chat("Hello", max_tokens=3))["r0"])["finish_reason"] == "length"


def test_parallel_one_queues_and_cancel_of_a_queued_request(backend):
    backend.submit({**chat("one", max_tokens=4), "id": "q1"})
    backend.submit({**chat("two", max_tokens=4), "id": "q2"})
    backend.submit({**chat("three", max_tokens=4), "id": "q3"})
    backend.step()
    stats = backend.stats()
    assert stats["active"] == 1 and stats["queued"] == 2 and stats["kv_used_tokens"] > 0
    backend.cancel("q2")
    out = run(backend)
    assert "q2" not in out
    assert done_of(out["q1"])["finish_reason"] == "length"
    assert done_of(out["q3"])["finish_reason"] == "length"


def test_small_prefill_chunks_give_the_same_text(backend, model_dir):
    prompt = "Laya Desktop serves local models through one OpenAI endpoint. " * 3
    ref = text_of(run(backend, chat(prompt, max_tokens=8))["r0"])
    b = MlxBackend({"name": "p", "path": str(model_dir), "n_ctx": 256, "prefill_step_size": 8})
    try:
        b.submit({**chat(prompt, max_tokens=8), "id": "x"})
        first = b.step()
        assert first == []  # a prefill chunk, no token yet: step() returned after a little work
        out = run(b)
        assert text_of(out["x"]) == ref
    finally:
        b.close()


def test_batching_with_parallel_two(backend, model_dir):
    prompts = ["Hello world", "The quick brown fox jumps over the lazy dog"]
    refs = [text_of(run(backend, chat(p, max_tokens=10))["r0"]) for p in prompts]
    b = MlxBackend({"name": "b", "path": str(model_dir), "n_ctx": 128, "parallel": 2})
    try:
        assert b.info()["batching"] is True and b.info()["kv_capacity_tokens"] == 256
        for i, p in enumerate(prompts):
            b.submit({**chat(p, max_tokens=10), "id": f"b{i}"})
        order = []
        while b.has_work():
            if b.stats()["active"] == 2:
                order.append("both")
            for ev in b.step():
                order.append(ev)
        assert "both" in order  # the two sequences ran at once
        for i in range(2):
            evs = [e for e in order if isinstance(e, dict) and e["id"] == f"b{i}"]
            assert done_of(evs)["finish_reason"] == "length"
            assert text_of(evs) == refs[i]
        # cancel inside a batch, and a stop string, then the engine still serves
        b.submit({**chat("Hello", max_tokens=50), "id": "long"})
        b.submit({**chat("Hello world", max_tokens=40, stop=[refs[0][3:6]]), "id": "st"})
        early = [ev for _ in range(3) for ev in b.step()]
        b.cancel("long")
        out = run(b)
        assert "long" not in out
        out["st"] = [e for e in early if e["id"] == "st"] + out.get("st", [])
        assert text_of(out["st"]) == refs[0][:refs[0].find(refs[0][3:6])]
        assert done_of(out["st"])["finish_reason"] == "stop"
    finally:
        b.close()


def test_missing_folder_fails_without_download(tmp_path):
    with pytest.raises(FileNotFoundError):
        MlxBackend({"name": "x", "path": str(tmp_path / "nope"), "n_ctx": 64})


# --- the real runner process ---


@pytest.mark.skipif(not (ROOT / "laya_desktop/runners/runner_main.py").exists(),
                    reason="runner_main.py not written yet")
def test_runner_process_load_chat_stream_cancel_unload(model_dir):
    spec = {"name": "t", "path": str(model_dir), "n_ctx": 512, "parallel": 1}
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "laya_desktop", "_runner", "--backend", "mlx",
         "--spec", json.dumps(spec)],
        cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, bufsize=1)

    def send(cmd):
        proc.stdin.write(json.dumps(cmd) + "\n")
        proc.stdin.flush()

    def read_until(pred, timeout=60):
        deadline = time.monotonic() + timeout
        events = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                pytest.fail(f"runner exited: {proc.stderr.read()[-2000:]}")
            ev = json.loads(line)
            events.append(ev)
            if pred(ev):
                return events
        pytest.fail("timed out")

    try:
        ready = read_until(lambda e: e.get("event") in ("ready", "load_failed"))[-1]
        assert ready["event"] == "ready", ready
        assert ready["info"]["n_ctx"] == 512 and ready["info"]["architecture"] == "llama"

        send({**chat("Hello", max_tokens=8), "id": "a"})
        evs = read_until(lambda e: e.get("id") == "a" and e["event"] == "done")
        mine = [e for e in evs if e.get("id") == "a"]
        assert done_of(mine)["finish_reason"] == "length" and text_of(mine)

        send({**chat("Hello", max_tokens=400, logit_bias=NO_EOS), "id": "c"})
        read_until(lambda e: e.get("id") == "c" and e["event"] == "token")
        send({"op": "cancel", "id": "c"})
        send({"op": "stats"})
        evs = read_until(lambda e: e.get("event") == "stats")
        assert "mlx_active_memory" in evs[-1]
        send({**chat("Hi", max_tokens=2), "id": "d"})
        evs = read_until(lambda e: e.get("id") == "d" and e["event"] == "done")
        assert not any(e.get("id") == "c" and e["event"] == "done"
                       and e["finish_reason"] != "cancelled" for e in evs)

        send({"op": "shutdown"})
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_mlx_failure_ends_the_requests_in_flight_not_the_backend(model_dir):
    b = MlxBackend({"name": "e", "path": str(model_dir), "n_ctx": 64})
    try:
        b.submit({**chat("Hi", max_tokens=5), "id": "boom"})

        def broken():
            raise RuntimeError("[metal] out of memory")

        b._engine.next = broken
        ev = b.step()
        assert ev == [{"event": "error", "id": "boom", "code": "internal",
                       "message": "mlx error: [metal] out of memory"}]
        assert not b.has_work()
        assert done_of(run(b, chat("Hi", max_tokens=3))["r0"])["finish_reason"] == "length"
    finally:
        b.close()


# --- agent requests: tools, refusals, count_only ---

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object",
                                          "properties": {"city": {"type": "string"}}}}}
TOOL_HISTORY = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
]
TOOLS_TEMPLATE = (
    "{{ bos_token }}{% if tools %}<|system|>tools:{% for t in tools %} {{ t.function.name }}"
    "{% endfor %}</s>{% endif %}"
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}"
    "{% for c in m.tool_calls or [] %}call {{ c.function.name }} {{ c.function.arguments | tojson }}"
    "{% endfor %}{% if m.tool_call_id %} for {{ m.tool_call_id }}{% endif %}</s>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def prompt_text(backend, cmd):
    return backend._tokenizer.decode(backend._prompts.tokens(cmd))


def test_json_schema_logprobs_and_embeddings_are_refused_naming_the_field(backend):
    cases = [(chat("Hi", json_schema={"type": "object"}), "response_format/json_schema"),
             (chat("Hi", logprobs=True), "logprobs"),
             (chat("Hi", logprobs=True, top_logprobs=2), "logprobs"),
             ({"op": "generate", "kind": "embedding", "inputs": ["hi"]}, "embeddings")]
    for i, (cmd, field) in enumerate(cases):
        (event,) = backend.submit({**cmd, "id": f"x{i}"})
        assert event["code"] == "bad_request" and event["message"].startswith(field), event
        assert "not supported on MLX" in event["message"]
    assert not backend.has_work()
    info = backend.info()
    assert info["tool_template"] is False and info["embedding"] is False and info["n_embd"] == 64


def test_count_only_and_tools_as_text_without_template_support(backend):
    plain = {**chat("Weather in Paris?"), "count_only": True}
    with_tools = {**plain, "tools": [WEATHER]}
    (a,) = backend.submit({**plain, "id": "c0"})
    (b,) = backend.submit({**with_tools, "id": "c1"})
    assert a["finish_reason"] == b["finish_reason"] == "count" and not backend.has_work()
    assert b["usage"]["prompt_tokens"] > a["usage"]["prompt_tokens"]
    text = prompt_text(backend, {"kind": "chat", "messages": TOOL_HISTORY, "tools": [WEATHER]})
    assert "<tools>" in text and '"name": "get_weather"' in text
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}' in text
    assert "<|user|><tool_response>\n18 C\n</tool_response>" in text


def test_a_tokenizer_template_with_tools_renders_them(tmp_path):
    folder = write_tiny_mlx_model(tmp_path / "tools", chat_template=TOOLS_TEMPLATE)
    b = MlxBackend({"name": "t", "path": str(folder), "n_ctx": 256})
    try:
        assert b.info()["tool_template"] is True
        text = prompt_text(b, {"kind": "chat", "messages": TOOL_HISTORY, "tools": [WEATHER]})
        assert "tools: get_weather" in text
        assert 'call get_weather {"city": "Paris"}' in text and "for call_1" in text
        done = done_of(run(b, {**chat("Hi", max_tokens=3), "tools": [WEATHER]})["r0"])
        assert done["usage"]["completion_tokens"] == 3
    finally:
        b.close()
