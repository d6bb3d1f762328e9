"""The llama.cpp runner as a real process speaking the JSON-lines protocol, plus its pure parts."""
from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from laya_desktop.runners.batching import FreeSlot, TextStream, choose_slot, plan_batch

ROOT = Path(__file__).resolve().parents[1]


class Runner:
    """A runner process; events are read on a thread so every wait has a timeout."""

    def __init__(self, spec: dict, backend: str = "llama_cpp"):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "laya_desktop", "_runner", "--backend", backend,
             "--spec", json.dumps(spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        self.events: queue.Queue = queue.Queue()
        self.stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            event = json.loads(line)            # a non-JSON line fails the test loudly
            if event.get("event") != "alive":   # the heartbeat says nothing about requests
                self.events.put(event)
        self.events.put(None)

    def send(self, **cmd):
        self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
        self.proc.stdin.flush()

    def next(self, timeout=20.0):
        event = self.events.get(timeout=timeout)
        assert event is not None, "runner closed its event stream: " + b"".join(self.stderr[-20:]).decode()
        return event

    def ready(self) -> dict:
        event = self.next(timeout=60)
        assert event["event"] == "ready", event
        return event["info"]

    def generate(self, req_id, params=None, **body):
        self.send(op="generate", id=req_id, params=params or {}, **body)

    def collect(self, ids, timeout=30.0):
        """Events until every id is done or failed: ({id: text}, {id: final event}, [events])."""
        texts = {i: "" for i in ids}
        final, log = {}, []
        deadline = time.monotonic() + timeout
        while len(final) < len(ids):
            event = self.next(timeout=max(deadline - time.monotonic(), 0.01))
            log.append(event)
            if event["event"] == "token" and event["id"] in texts:   # others' tokens may come between
                texts[event["id"]] += event["text"]
            elif event["event"] in ("done", "error") and event.get("id") in texts:
                final[event["id"]] = event
        return texts, final, log

    def stats(self):
        self.send(op="stats")
        while True:
            event = self.next()
            if event["event"] == "stats":
                return event

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send(op="shutdown")
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture
def start():
    runners = []

    def _start(path, **spec):
        runner = Runner({"name": "t", "path": str(path), "n_ctx": 256, "parallel": 4, **spec})
        runners.append(runner)
        return runner
    yield _start
    for runner in runners:
        runner.close()


GREEDY = {"temperature": 0}


# --- pure parts ----------------------------------------------------------------------------------

def test_text_stream_never_splits_utf8_and_holds_back_stop_prefixes():
    s = TextStream(["STOP"])
    data = "é日".encode()
    assert s.push(data[:1]) == "" and s.push(data[1:3]) == "é" and s.push(data[3:]) == "日"
    assert s.push(b"ab ST") == "ab " and s.push(b"O") == ""
    assert s.push(b"x") == "STOx"                       # not a stop after all
    assert s.push(b"..S") == ".." and s.push(b"TOP tail") == "" and s.stopped
    assert s.flush() == ""
    t = TextStream(["\n\n"])
    assert t.push(b"a\n") == "a" and t.flush() == "\n"


def test_choose_slot_prefers_longest_prefix_then_least_recently_used():
    free = [FreeSlot(0, [1, 2, 3], 5.0), FreeSlot(1, [1, 2, 3, 4, 5], 9.0), FreeSlot(2, [], 1.0)]
    assert choose_slot([1, 2, 3, 4, 9], free) == (1, 4)
    assert choose_slot([1, 2, 3, 4, 5], free) == (1, 4)     # one token left to read for logits
    assert choose_slot([7, 8], free) == (2, 0)


def test_plan_batch_chunks_prompts_while_others_decode():
    assert plan_batch(0, [("a", 1000)], 512, 128) == [("a", 512)]
    assert plan_batch(3, [("a", 1000), ("b", 10)], 512, 128) == [("a", 128)]
    assert plan_batch(2, [("a", 50), ("b", 100)], 512, 128) == [("a", 50), ("b", 78)]


# --- the runner process on the tiny GGUF ---------------------------------------------------------

def test_yarn_only_past_the_trained_context(start, tiny_gguf):
    """The tiny GGUF is trained on 2,048 tokens: a longer n_ctx gets YaRN, a shorter one none."""
    assert start(tiny_gguf, n_ctx=4096, parallel=1).ready()["rope_scaling"] == "yarn"
    assert start(tiny_gguf, n_ctx=2048, parallel=1).ready()["rope_scaling"] is None


def test_ready_completion_and_chat(start, tiny_gguf):
    r = start(tiny_gguf)
    info = r.ready()
    assert info["n_ctx"] == 256 and info["parallel"] == 4 and info["architecture"] == "llama"
    assert info["kv_capacity_tokens"] == 1024 and info["chat_format"] == "chatml"
    assert info["kv_bytes_per_token"] == 2 * 2 * (16 + 16) * 2   # layers x kv heads x (k+v) x f16
    r.generate("c", {"max_tokens": 8, **GREEDY}, kind="completion", prompt="Hello world")
    r.generate("h", {"max_tokens": 8}, kind="chat", messages=[{"role": "user", "content": "Hi"}])
    texts, final, _ = r.collect(["c", "h"])
    for i in ("c", "h"):
        assert final[i]["event"] == "done", final[i]
        assert final[i]["usage"]["completion_tokens"] >= 1 and final[i]["usage"]["prompt_tokens"] > 1
    assert final["c"]["finish_reason"] == "length" and final["c"]["usage"]["completion_tokens"] == 8
    assert texts["c"]
    stats = r.stats()
    assert stats["active"] == 0 and stats["queued"] == 0 and stats["kv_used_tokens"] > 0
    assert r.close() == 0


def test_four_requests_interleave_and_a_fifth_queues(start, tiny_gguf):
    r = start(tiny_gguf, n_ctx=2048)
    r.ready()
    ids = ["r0", "r1", "r2", "r3", "r4"]
    for i in ids:
        # the first four hold their slots long enough (seconds) for the stats below to see r4 wait
        tokens = 40 if i == "r4" else 1000
        r.generate(i, {"max_tokens": tokens, **GREEDY}, kind="completion", prompt=f"Request {i} says")
    r.send(op="stats")   # answered after r4 arrived; pushed stats may come before the answer
    texts, final, log = r.collect(ids)
    queued = max(e["queued"] for e in log if e["event"] == "stats")
    assert all(final[i]["event"] == "done" for i in ids)
    first_done = next(n for n, e in enumerate(log) if e["event"] == "done")
    early = {e["id"] for e in log[:first_done] if e["event"] == "token"}
    assert len(early) >= 3, log[:first_done]            # several sequences advanced together
    assert queued >= 1                                  # only 4 slots
    assert "r4" not in early


def test_cancel_stops_a_sequence_and_frees_its_slot(start, tiny_gguf):
    r = start(tiny_gguf, n_ctx=4096, parallel=1)
    r.ready()
    r.generate("long", {"max_tokens": 4000}, kind="completion", prompt="Go on forever")
    r.generate("next", {"max_tokens": 4, **GREEDY}, kind="completion", prompt="After that")
    while (e := r.next())["event"] != "token":
        pass
    r.send(op="cancel", id="long")
    r.send(op="cancel", id="no-such-request")          # ignored
    texts, final, _ = r.collect(["long", "next"])
    assert final["long"]["finish_reason"] == "cancelled"
    assert final["long"]["usage"]["completion_tokens"] < 4000
    assert final["next"]["event"] == "done" and final["next"]["finish_reason"] == "length"
    assert r.stats()["active"] == 0


def test_prompt_longer_than_n_ctx_and_bad_params(start, tiny_gguf):
    r = start(tiny_gguf, n_ctx=32)
    r.ready()
    r.generate("long", {}, kind="completion", prompt="word " * 100)
    r.generate("bad", {"temperature": "hot"}, kind="completion", prompt="x")
    r.generate("ok", {"max_tokens": 100, **GREEDY}, kind="completion", prompt="short")
    _, final, _ = r.collect(["long", "bad", "ok"])
    assert final["long"]["event"] == "error" and final["long"]["code"] == "context_length_exceeded"
    assert final["bad"]["event"] == "error" and final["bad"]["code"] == "bad_request"
    ok = final["ok"]                                    # generation that reaches n_ctx: "length"
    assert ok["finish_reason"] == "length"
    assert ok["usage"]["prompt_tokens"] + ok["usage"]["completion_tokens"] == 32


def test_long_prompt_is_read_in_chunks_while_others_decode(start, tiny_gguf):
    r = start(tiny_gguf, n_ctx=2048, parallel=2)
    r.ready()
    r.generate("a", {"max_tokens": 300, **GREEDY}, kind="completion", prompt="Keep talking")
    while (e := r.next())["event"] != "token":
        pass
    r.generate("b", {"max_tokens": 2, **GREEDY}, kind="completion", prompt="the " * 1200)
    texts, final, log = r.collect(["a", "b"])
    assert final["b"]["event"] == "done" and final["b"]["usage"]["prompt_tokens"] > 1000
    first_b = next(n for n, e in enumerate(log) if e["event"] == "token" and e["id"] == "b")
    # 1200 prompt tokens at 64 per step: "a" keeps streaming while "b" is read
    assert sum(1 for e in log[:first_b] if e.get("id") == "a") >= 10


@pytest.mark.parametrize("broken", ["corrupt", "missing"])
def test_bad_model_file_is_load_failed_and_exit_1(start, tmp_path, broken):
    from gguf_factory import write_corrupt_gguf
    path = tmp_path / "model.gguf"
    if broken == "corrupt":
        write_corrupt_gguf(path)
    r = start(path)
    event = r.next(timeout=30)
    assert event["event"] == "load_failed" and event["message"]
    assert r.proc.wait(timeout=10) == 1
    if broken == "missing":
        assert "not found" in event["message"]


def test_second_chat_turn_reuses_the_prefix(start, tiny_gguf):
    r = start(tiny_gguf)
    r.ready()
    turn1 = [{"role": "system", "content": "You are a terse assistant."},
             {"role": "user", "content": "Name three colours."}]
    r.generate("t1", {"max_tokens": 12, **GREEDY}, kind="chat", messages=turn1)
    texts, final, _ = r.collect(["t1"])
    assert final["t1"]["usage"]["cached_tokens"] == 0
    turn2 = turn1 + [{"role": "assistant", "content": texts["t1"]},
                     {"role": "user", "content": "And three animals?"}]
    r.generate("t2", {"max_tokens": 4, **GREEDY}, kind="chat", messages=turn2)
    _, final, _ = r.collect(["t2"])
    usage = final["t2"]["usage"]
    assert usage["cached_tokens"] > 20 and usage["cached_tokens"] < usage["prompt_tokens"]


def test_stop_string_ends_the_text_before_it(start, tiny_gguf):
    body = {"kind": "completion", "prompt": "The quick brown fox"}
    a = start(tiny_gguf)
    a.ready()
    a.generate("full", {"max_tokens": 40, **GREEDY}, **body)
    full = a.collect(["full"])[0]["full"]
    # a stop string from the middle of the text, made of characters that occur once there
    cut = next(i for i in range(4, len(full) - 2)
               if full[i:i + 2].isprintable() and full.find(full[i:i + 2]) == i)
    stop = full[cut:cut + 2]
    b = start(tiny_gguf)                                 # a fresh runner: same numerics
    b.ready()
    b.generate("stopped", {"max_tokens": 40, "stop": [stop], **GREEDY}, **body)
    texts, final, _ = b.collect(["stopped"])
    assert final["stopped"]["finish_reason"] == "stop"
    assert texts["stopped"] == full[:cut]


def test_shutdown_and_stdin_eof_exit_0(start, tiny_gguf):
    a = start(tiny_gguf)
    a.ready()
    a.send(op="shutdown")
    assert a.proc.wait(timeout=10) == 0
    b = start(tiny_gguf)
    b.ready()
    b.proc.stdin.close()                                # the engine died
    assert b.proc.wait(timeout=10) == 0


# --- the built-in Gemma ----------------------------------------------------------------------------

PROMPTS = ["The capital of France is a beautiful city that",
           "Once upon a time, in a small village, there was a",
           "def fibonacci(n):\n    \"\"\"Return the",
           "The three primary colors of light are red, green and"]


@pytest.mark.slow
def test_gemma_batched_greedy_equals_unbatched(start, gemma_path):
    """Continuous batching must not change what a sequence computes: each prompt alone and the
    four together give the same 16 greedy tokens, with `cpu_repack: false` (the repacked kernels,
    on by default as in llama-server, compute a row differently with the rows beside it).
    (Prompts of 10+ tokens: ggml's matmul takes a different kernel below 8 rows, which would
    change the prompt's numerics, not the batching.)"""
    params = {"max_tokens": 16, **GREEDY}
    alone = start(gemma_path, n_ctx=512, parallel=4, cpu_repack=False)
    alone.ready()
    single = {}
    for i, prompt in enumerate(PROMPTS):
        alone.generate(f"p{i}", params, kind="completion", prompt=prompt)
        texts, final, _ = alone.collect([f"p{i}"], timeout=60)
        assert final[f"p{i}"]["usage"]["completion_tokens"] == 16
        single.update(texts)
    together = start(gemma_path, n_ctx=512, parallel=4, cpu_repack=False)
    together.ready()
    for i, prompt in enumerate(PROMPTS):
        together.generate(f"p{i}", params, kind="completion", prompt=prompt)
    batched, final, log = together.collect(list(single), timeout=60)
    first_done = next(n for n, e in enumerate(log) if e["event"] == "done")
    assert len({e["id"] for e in log[:first_done] if e["event"] == "token"}) == 4
    assert batched == single


@pytest.mark.slow
def test_gemma_knows_the_capital_of_france(start, gemma_path):
    r = start(gemma_path, n_ctx=512, parallel=2)
    r.ready()
    r.generate("q", {"max_tokens": 12, **GREEDY}, kind="completion",
               prompt="Q: What is the capital of France?\nA:")
    r.generate("chat", {"max_tokens": 8, **GREEDY}, kind="chat",
               messages=[{"role": "system", "content": "Answer briefly."},
                         {"role": "user", "content": "Hello"}])
    texts, final, _ = r.collect(["q", "chat"], timeout=60)
    assert "Paris" in texts["q"]
    assert final["chat"]["event"] == "done" and final["chat"]["usage"]["prompt_tokens"] > 8


def test_gguf_chat_template_is_used_and_chat_format_overrides_it(start, tmp_path):
    from gguf_factory import write_tiny_gguf
    template = ("{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
                "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    path = write_tiny_gguf(tmp_path / "templated.gguf", chat_template=template)
    messages = [{"role": "user", "content": [{"type": "text", "text": "Hello there"}]}]
    results = []
    for chat_format in (None, "chatml"):
        r = start(path, chat_format=chat_format)
        assert r.ready()["chat_format"] == (chat_format or "gguf")
        r.generate("m", {"max_tokens": 6, **GREEDY}, kind="chat", messages=messages)
        texts, final, _ = r.collect(["m"])
        results.append((texts["m"], final["m"]["usage"]["prompt_tokens"]))
    assert results[0] == results[1]       # the template's BOS is not doubled
    r = start(path, chat_format="no-such-format")
    event = r.next(timeout=30)
    assert event["event"] == "load_failed" and "chatml" in event["message"]
