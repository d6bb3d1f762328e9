"""The runner contract (runners/contract.py), one suite run against both backends in-process:
llama.cpp on the tiny GGUF of tests/gguf_factory.py, MLX on the tiny folder of tests/mlx_factory.py
(mlx[cpu], offline). Same defaults, events, cancel, errors, stop strings, finish reasons, usage."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import pytest

from laya_desktop.config.sampling import KNOBS
from laya_desktop.runners.contract import RunnerBackend
from laya_desktop.runners.memory_estimate import kv_bytes_per_token_of
from laya_desktop.runners.protocol import BadRequest, SamplingParams, parse_params
from runner_steps import run, text_of

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

N_CTX = 128


@dataclass
class Subject:
    backend: RunnerBackend
    eos: int
    kv_element_bytes: int                            # f16 KV on llama.cpp, float32 weights on MLX
    live_params: Callable[[str], SamplingParams]     # a queued or running request's checked params

    def no_eos(self) -> dict:
        return {str(self.eos): -100}


def _llama(tmp_path_factory, tiny_gguf) -> Subject:
    import llama_cpp as L
    from laya_desktop.runners.llama_cpp_backend import LlamaCppBackend

    b = LlamaCppBackend({"name": "t", "path": str(tiny_gguf), "n_ctx": N_CTX, "parallel": 1,
                         "n_threads": 1})

    def live_params(req_id):
        live = [*b.waiting, *(s.request for s in b.slots if s.request)]
        return next(r.params for r in live if r.id == req_id)

    return Subject(b, L.llama_vocab_eos(b.vocab), 2, live_params)


def _mlx(tmp_path_factory, _tiny_gguf) -> Subject:
    pytest.importorskip("mlx_lm")
    from mlx_factory import write_tiny_mlx_model
    from laya_desktop.runners.mlx_backend import MlxBackend

    folder = write_tiny_mlx_model(tmp_path_factory.mktemp("contract-mlx"))
    b = MlxBackend({"name": "t", "path": str(folder), "n_ctx": N_CTX, "parallel": 1})
    return Subject(b, 2, 4, lambda req_id: b._ids[req_id].params)


@pytest.fixture(scope="module", params=[_llama, _mlx], ids=["llama_cpp", "mlx"])
def subject(request, tmp_path_factory, tiny_gguf):
    s = request.param(tmp_path_factory, tiny_gguf)
    yield s
    s.backend.close()


def chat(req_id, text="Hello there", **params):
    return {"op": "generate", "id": req_id, "kind": "chat",
            "messages": [{"role": "user", "content": text}], "params": params}


def completion(req_id, prompt, **params):
    return {"op": "generate", "id": req_id, "kind": "completion", "prompt": prompt,
            "params": params}


def check_sequence(events) -> dict:
    """queued, token*, exactly one done, last; returns the done."""
    assert events[0]["event"] == "queued", events[:2]
    assert all(e["event"] == "token" for e in events[1:-1]), events
    done = events[-1]
    assert done["event"] == "done", events[-3:]
    assert done["usage"]["prompt_tokens"] == events[0]["prompt_tokens"]
    return done


def test_defaults_info_and_stats(subject):
    b = subject.backend
    (queued,) = b.submit(chat("d"))
    assert queued["event"] == "queued"
    p = subject.live_params("d")
    assert p == parse_params({}) and p.max_tokens is None and p.stop == []
    assert {k: getattr(p, k) for k in KNOBS} == {k: knob.default for k, knob in KNOBS.items()}
    b.cancel("d")
    info = b.info()
    assert info["n_ctx"] == N_CTX and info["parallel"] == 1 and info["kv_capacity_tokens"] == N_CTX
    # both tiny models: 2 layers, 2 KV heads of 16, through memory_estimate's one formula
    assert info["kv_bytes_per_token"] == kv_bytes_per_token_of([2, 2], 16, 16,
                                                                subject.kv_element_bytes)
    assert info["architecture"] == "llama" and info["embedding"] is False
    assert info["n_embd"] == 64 and info["tool_template"] in (True, False)
    stats = b.stats()
    for key in ("kv_used_tokens", "kv_capacity_tokens", "kv_bytes_per_token", "active", "queued",
                "tokens_per_s"):
        assert key in stats, key
    assert stats["active"] == stats["queued"] == 0


def test_max_tokens_gives_length_with_its_usage(subject):
    events = run(subject.backend, chat("m", temperature=0, max_tokens=6,
                                       logit_bias=subject.no_eos()))["m"]
    done = check_sequence(events)
    assert done["finish_reason"] == "length"
    assert done["usage"]["completion_tokens"] == 6 and done["usage"]["prompt_tokens"] > 3
    assert text_of(events)


def test_end_of_sequence_is_stop_and_not_a_token(subject):
    events = run(subject.backend, completion("e", "The quick brown", max_tokens=5,
                                             logit_bias={str(subject.eos): 100}))["e"]
    done = check_sequence(events)
    assert done["finish_reason"] == "stop" and done["usage"]["completion_tokens"] == 0
    assert text_of(events) == ""


def test_a_stop_string_cuts_the_text_and_is_never_sent(subject):
    greedy = dict(temperature=0, max_tokens=24, logit_bias=subject.no_eos())
    ref = text_of(run(subject.backend, completion("r", "Memory guards", **greedy))["r"])
    start = next(i for i in range(3, len(ref) - 2) if ref[i:i + 2].strip() == ref[i:i + 2])
    stop = ref[start:start + 2]
    events = run(subject.backend, completion("s", "Memory guards", stop=["@@never@@", stop],
                                             **greedy))["s"]
    assert check_sequence(events)["finish_reason"] == "stop"
    assert text_of(events) == ref[:ref.find(stop)]


def test_the_same_prompt_again_reuses_its_kv(subject):
    greedy = dict(temperature=0, max_tokens=4, logit_bias=subject.no_eos())
    first = run(subject.backend, completion("p1", "A prompt read twice", **greedy))["p1"]
    again = run(subject.backend, completion("p2", "A prompt read twice", **greedy))["p2"]
    usage = check_sequence(again)["usage"]
    assert usage["cached_tokens"] == usage["prompt_tokens"] - 1   # one token read for its logits
    assert text_of(again) == text_of(first)


def test_cancel_of_a_running_request_ends_with_a_cancelled_done(subject):
    b = subject.backend
    seen = list(b.submit(chat("c", max_tokens=200, logit_bias=subject.no_eos())))
    while sum(e["event"] == "token" for e in seen) < 2:
        seen += b.step()
    (done,) = b.cancel("c")
    check_sequence(seen + [done])
    assert done["finish_reason"] == "cancelled"
    assert done["usage"]["completion_tokens"] >= sum(e["event"] == "token" for e in seen)
    assert not b.has_work() and b.step() == []
    assert b.cancel("c") == [] and b.cancel("never-sent") == []


def test_cancel_of_a_queued_request_ends_with_a_cancelled_done(subject):
    b = subject.backend
    b.submit(chat("q1", max_tokens=4))
    (queued,) = b.submit(chat("q2", max_tokens=4))
    b.step()
    assert b.stats()["queued"] == 1   # parallel 1: q2 waits for q1's slot
    (done,) = b.cancel("q2")
    assert done["finish_reason"] == "cancelled"
    assert done["usage"] == {"prompt_tokens": queued["prompt_tokens"], "completion_tokens": 0,
                             "cached_tokens": 0}
    out = run(b)
    assert "q2" not in out and out["q1"][-1]["finish_reason"] == "length"


@pytest.mark.parametrize("params", [
    {"temperature": "hot"}, {"temperature": 3}, {"top_k": 2.5}, {"max_tokens": 0},
    {"stop": 5}, {"logit_bias": {"x": 1}}, {"seed": "7"}, {"top_p": -0.5}, "nope",
])
def test_bad_params_give_the_parsers_error(subject, params):
    with pytest.raises(BadRequest) as expected:
        parse_params(params)
    cmd = {**chat("b"), "params": params}
    assert subject.backend.submit(cmd) == [
        {"event": "error", "id": "b", "code": "bad_request", "message": str(expected.value)}]
    assert not subject.backend.has_work()


def test_bad_commands_and_a_long_prompt_are_refused_alike(subject):
    b = subject.backend
    cases = [({**chat(7)}, 7, "generate needs a new string id"),
             ({**chat("k"), "kind": "poem"}, "k",
              "unknown kind 'poem' (valid: chat, completion)"),
             (completion("n", 5), "n", "prompt must be a string")]
    for cmd, req_id, message in cases:
        assert b.submit(cmd) == [{"event": "error", "id": req_id, "code": "bad_request",
                                  "message": message}]
    b.submit(chat("live", max_tokens=2))
    assert b.submit(chat("live"))[0]["message"] == "generate needs a new string id"
    run(b)
    (long,) = b.submit(completion("l", "fox " * 200))
    assert long["code"] == "context_length_exceeded"
    assert long["message"].endswith(f"more than this model's context of {N_CTX} tokens per sequence")
    assert not b.has_work()


def test_count_only_counts_the_prompt_a_generate_would_read(subject):
    b = subject.backend
    (count,) = b.submit({**chat("n1"), "count_only": True})
    assert count["event"] == "done" and count["finish_reason"] == "count"
    assert not b.has_work()
    (queued,) = b.submit(chat("n2"))
    assert count["usage"] == {"prompt_tokens": queued["prompt_tokens"], "completion_tokens": 0,
                              "cached_tokens": 0}
    b.cancel("n2")
