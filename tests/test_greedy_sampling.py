"""Plain greedy requests are picked by argmax over the logits row, without a llama.cpp sampler
chain (llama_sampler_sample copies the whole vocabulary per token); anything that changes the
logits first still goes through the chain."""
from __future__ import annotations

import dataclasses

import pytest

from gguf_factory import write_tiny_gguf
from laya_desktop.runners import llama_sampling
from laya_desktop.runners import protocol as P
from laya_desktop.runners.llama_cpp_backend import LlamaCppBackend
from runner_steps import run, text_of

GREEDY = P.SamplingParams(temperature=0)


@pytest.mark.parametrize("change", [
    {"temperature": 0.7}, {"logit_bias": {5: 2.0}}, {"json_schema": {"type": "object"}},
    {"repeat_penalty": 1.1}, {"frequency_penalty": 0.5}, {"presence_penalty": -0.5},
    {"dry_multiplier": 0.8},
])
def test_anything_that_changes_the_logits_keeps_the_sampler_chain(change):
    assert llama_sampling.plain_greedy(GREEDY)
    assert not llama_sampling.plain_greedy(dataclasses.replace(GREEDY, **change))


def test_a_repeat_penalty_of_zero_means_none_as_in_the_chain():
    assert llama_sampling.plain_greedy(dataclasses.replace(GREEDY, repeat_penalty=0.0))
    assert llama_sampling.plain_greedy(dataclasses.replace(GREEDY, repeat_penalty=1.0, top_k=5,
                                                           top_p=0.5, min_p=0.2, seed=7))


@pytest.fixture(scope="module")
def gguf(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("greedy") / "tiny.gguf", n_layer=2, n_embd=64)


def answers(gguf, params: dict) -> list[str]:
    backend = LlamaCppBackend({"name": "g", "path": str(gguf), "n_ctx": 256, "parallel": 4,
                               "n_threads": 1})
    try:
        cmds = [{"kind": "completion", "prompt": p, "params": {"max_tokens": 24, **params}}
                for p in ("the cat sat on", "a b c d e", "once upon a time", "hello world")]
        events = run(backend, *cmds)
        return [text_of(events[f"r{i}"]) for i in range(len(cmds))]
    finally:
        backend.close()


def test_argmax_picks_what_llama_cpps_greedy_sampler_picks(gguf, monkeypatch):
    fast = answers(gguf, {"temperature": 0})
    assert all(fast)
    monkeypatch.setattr(llama_sampling, "plain_greedy", lambda p: False)
    assert answers(gguf, {"temperature": 0}) == fast


def test_a_biased_greedy_request_goes_through_the_chain(gguf):
    # a bias large enough to pick its token at every step: only the chain applies it
    backend = LlamaCppBackend({"name": "g", "path": str(gguf), "n_ctx": 256, "parallel": 1,
                               "n_threads": 1})
    try:
        events = run(backend, {"kind": "completion", "prompt": "the cat sat on",
                               "params": {"max_tokens": 4, "temperature": 0,
                                          "logit_bias": {"65": 100.0}}})
        done = [e for e in events["r0"] if e["event"] == "done"][0]
        assert done["usage"]["completion_tokens"] == 4
        assert backend.piece(65).decode("utf-8", "replace") * 4 == text_of(events["r0"])
    finally:
        backend.close()

