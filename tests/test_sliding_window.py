"""Prefix reuse on a model with sliding-window layers (a tiny Gemma 3 with a 32-token window),
whose cache keeps only the window: a reused prefix must give the same greedy tokens as reading
the whole prompt afresh, whether the window was still there, came back from the slot's
checkpoint, or had to be read again."""
from __future__ import annotations

import pytest

from gguf_factory import write_tiny_gguf
from laya_desktop.runners.llama_cpp_backend import LlamaCppBackend
from runner_steps import run

WINDOW = 32


@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("swa") / "tiny-gemma3.gguf", n_layer=6,
                           sliding_window=WINDOW)


@pytest.fixture
def backend(gemma):
    b = LlamaCppBackend({"name": "g", "path": str(gemma), "n_ctx": 2048, "parallel": 1,
                         "n_threads": 1})
    yield b
    b.close()


def complete(backend, prompt: list[int], max_tokens: int) -> tuple[list[str], dict]:
    """(the generated pieces, the done event's usage) of a greedy completion that never stops
    early (the end-of-text token banned)."""
    eos = backend.tokenize("<|endoftext|>", False)
    params = {"max_tokens": max_tokens, "temperature": 0, "logit_bias": {str(t): -100 for t in eos}}
    events = run(backend, {"id": "x", "kind": "completion", "prompt": prompt, "params": params})["x"]
    done = events[-1]
    assert done["event"] == "done", events[-3:]
    return [e["text"] for e in events if e["event"] == "token"], done["usage"]


def fresh(gemma, prompt: list[int], max_tokens: int) -> list[str]:
    b = LlamaCppBackend({"name": "f", "path": str(gemma), "n_ctx": 2048, "parallel": 1,
                         "n_threads": 1})
    try:
        return complete(b, prompt, max_tokens)[0]
    finally:
        b.close()


def assert_reused(backend, gemma, prompt: list[int], cached: int) -> None:
    """The prompt's answer keeps `cached` tokens of the slot's cache and equals a fresh read's."""
    again, usage = complete(backend, prompt, 12)
    assert usage["cached_tokens"] == cached
    assert again == fresh(gemma, prompt, 12)


def tokens(backend, n: int, seed: str) -> list[int]:
    text = " ".join(f"{seed}{i}" for i in range(n))
    return backend.tokenize(text, False)[:n]


def test_the_window_cache_is_a_window(backend):
    assert backend.n_swa == WINDOW
    stats = backend.stats()
    assert stats["kv_capacity_bytes"] < 2048 * backend.kv_bytes_per_token / 2   # 5 of 6 layers: 768 cells
    complete(backend, tokens(backend, 40, "a"), 4)
    used = backend.stats()["kv_used_bytes"]
    assert 0 < used < 44 * backend.kv_bytes_per_token + 1


def test_an_extended_prompt_keeps_the_whole_cached_prompt(backend, gemma):
    first = tokens(backend, 60, "a")
    complete(backend, first, 8)
    follow = first + backend.tokenize(" then more words here", False)
    assert_reused(backend, gemma, follow, 60)   # the prompt (the answer differs from what `follow` adds)


def test_a_prompt_that_shares_the_last_prompt_after_a_long_answer_reuses_its_checkpoint(backend, gemma):
    """The answer runs 900 tokens past the prompt, so the window cache has dropped the cells
    before the shared prefix's end: without the checkpoint they would be missing, silently."""
    first = tokens(backend, 100, "b")
    complete(backend, first, 900)
    follow = first + tokens(backend, 20, "c")
    assert_reused(backend, gemma, follow, 100)


def test_a_fork_just_before_the_last_prompts_end_after_a_long_answer_comes_from_the_checkpoint(
        backend, gemma):
    """An edited last message or a regenerated answer: the checkpoint serves any prefix inside
    its prompt that has a window before it."""
    first = tokens(backend, 100, "f")
    complete(backend, first, 900)
    fork = first[:98] + tokens(backend, 10, "g")
    assert_reused(backend, gemma, fork, 98)


def test_a_fork_more_than_the_cache_back_in_a_long_prompt_is_read_again(backend, gemma):
    """A 1,000-token prompt overflows the 768-cell window cache while it is read: the checkpoint
    too holds only its last 768 positions, so a fork at 100 cannot be served."""
    first = tokens(backend, 1000, "h")
    complete(backend, first, 4)
    fork = first[:100] + tokens(backend, 20, "i")
    assert_reused(backend, gemma, fork, 0)
    complete(backend, first, 1)                        # the slot holds the long prompt again
    near_end = first[:990] + tokens(backend, 5, "j")   # its live window still covers this fork
    assert_reused(backend, gemma, near_end, 990)
