"""Sampling parameters through HTTP change what a real llama.cpp runner writes: each test compares
against the greedy answer, with a control that shows the parameter (not chance) made the change."""
from __future__ import annotations

import pytest

from engine_harness import running_engine

PROMPT = "the cat sat on the"
N = 24
SEEDS = (1, 2, 3)


@pytest.fixture(scope="module")
def client(tiny_gguf, tmp_path_factory):
    config = {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(tiny_gguf),
                          "n_ctx": 512, "parallel": 2, "idle_ttl_s": 0}],
              "routes": [{"name": "d", "target": "tiny"}]}
    with running_engine(config, tmp_path_factory.mktemp("sampling")) as eng, eng.client() as c:
        yield c


def complete(c, **params) -> dict:
    r = c.post("/v1/completions", json={"prompt": PROMPT, "max_tokens": N, **params})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]


def text(c, **params) -> str:
    return complete(c, **params)["text"]


@pytest.fixture(scope="module")
def greedy(client) -> str:
    answer = text(client, temperature=0)
    assert len(answer) >= 8 and answer == text(client, temperature=0)
    return answer


def test_seed_repeats_a_sampled_answer_and_another_seed_changes_it(client):
    first = text(client, temperature=1.5, seed=7)
    assert text(client, temperature=1.5, seed=7) == first
    assert any(text(client, temperature=1.5, seed=s) != first for s in (8, 9, 10))


@pytest.mark.parametrize("narrow", [{"top_k": 1}, {"top_p": 1e-6}, {"min_p": 1.0}],
                         ids=["top_k", "top_p", "min_p"])
def test_a_narrow_filter_turns_hot_sampling_greedy(client, greedy, narrow):
    hot = {"temperature": 2.0}
    assert any(text(client, **hot, seed=s) != greedy for s in SEEDS)      # control
    assert all(text(client, **hot, **narrow, seed=s) == greedy for s in SEEDS)


def test_stop_ends_the_text_before_the_stop_string(client, greedy):
    stop = greedy[6:9]
    choice = complete(client, temperature=0, stop=[stop])
    assert choice["text"] == greedy[:greedy.index(stop)]
    assert choice["finish_reason"] == "stop"
    r = client.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": PROMPT}], "max_tokens": N, "temperature": 0})
    chat = r.json()["choices"][0]["message"]["content"]
    stop = chat[6:9]
    r = client.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": PROMPT}], "max_tokens": N, "temperature": 0,
        "stop": stop})
    answer = r.json()["choices"][0]
    assert answer["message"]["content"] == chat[:chat.index(stop)]
    assert answer["finish_reason"] == "stop"


def test_logit_bias_forces_and_bans_tokens(client, greedy):
    # the tiny model's first 256 tokens are the bytes, in byte order; its merges start with a
    # space or one of "haeiro", so any other byte is in no other token
    q, r = str(ord("Q")), str(ord("R"))
    assert text(client, temperature=0, logit_bias={q: 100}) == "Q" * N
    assert text(client, temperature=0, logit_bias={r: 100}) == "R" * N
    assert text(client, temperature=0, logit_bias={q: 100, r: 100}).strip("QR") == ""
    banned = next(ch for ch in greedy if ch.isascii() and ch.isprintable() and ch not in " haeiro")
    assert banned not in text(client, temperature=0, logit_bias={str(ord(banned)): -100})


@pytest.mark.parametrize("penalty", [{"frequency_penalty": 2.0}, {"presence_penalty": 2.0},
                                     {"repeat_penalty": 2.0}],
                         ids=["frequency", "presence", "repeat"])
def test_penalties_change_a_greedy_answer(client, greedy, penalty):
    assert len(set(greedy)) < len(greedy)                # greedy repeats itself: room to act
    penalised = text(client, temperature=0, **penalty)
    assert penalised != greedy
    assert text(client, temperature=0, **penalty) == penalised   # still deterministic
