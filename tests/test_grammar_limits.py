"""Grammars that cannot hurt the runner: JSON schemas past schema_limits are refused
by name before any grammar code sees them, on all five grammar paths, and the runner they were
meant for keeps its pid and its other streams; allowed schemas are built on the runner's grammar
worker, cached by schema, and do not hold up another request's first token.

Pure limit checks first, then a real runner process, then a real engine on the tiny GGUF.
"""
from __future__ import annotations

import json
import statistics
import threading
import time

import httpx
import jsonschema
import pytest

from engine_harness import running_engine
from laya_desktop.runners import schema_limits as S
from laya_desktop.runners.grammar_cache import GrammarCache, schema_key
from test_runner_llama import GREEDY, Runner
from test_runner_tools import BOUNDED_SCHEMA

HUGE = 20_000
USER = [{"role": "user", "content": "Answer in JSON"}]


def huge_schemas() -> dict[str, dict]:
    """One schema past each limit, by the limit's name."""
    return {
        "maxLength": {"type": "string", "maxLength": HUGE},
        "maxItems": {"type": "array", "items": {"type": "integer"}, "maxItems": HUGE},
        "minLength": {"type": "string", "minLength": 10 ** 8},
        "pattern": {"type": "string", "pattern": f"^a{{0,{HUGE}}}$"},
        "enum": {"enum": [f"v{i}" for i in range(HUGE)]},
        "anyOf": {"anyOf": [{"const": i} for i in range(S.MAX_ALTERNATIVES + 1)]},
        "properties": {"type": "object",
                       "properties": {f"p{i}": {"type": "integer"} for i in range(300)}},
        "depth": _nested(S.MAX_DEPTH),
    }


def _nested(levels: int) -> dict:
    schema: dict = {"type": "integer"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


# --- pure: the limits -----------------------------------------------------------------------------

@pytest.mark.parametrize("limit", list(huge_schemas()))
def test_a_schema_past_a_limit_is_refused_naming_the_limit(limit):
    with pytest.raises(S.SchemaTooLarge) as caught:
        S.check_schema(huge_schemas()[limit])
    assert caught.value.limit == limit and limit in str(caught.value)
    assert caught.value.code == "schema_too_large"


def test_the_message_says_by_how_much_and_where():
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": HUGE}}}
    with pytest.raises(S.SchemaTooLarge, match=rf"maxLength {HUGE} > {S.MAX_REPETITION} at "
                                               r"\$\.properties\.name"):
        S.check_schema(schema)


def test_ordinary_schemas_and_the_largest_allowed_pass():
    for schema in (BOUNDED_SCHEMA, {"type": "object"}, {"type": "string", "pattern": r"^\d{3}-\d{4}$"},
                   {"type": "string", "maxLength": S.MAX_REPETITION},
                   {"enum": list(range(S.MAX_ENUM))},
                   {"type": "string", "pattern": "^(a|b){0,20}(c{1,5}){0,10}$"},
                   # a literal is not a schema: its keys are not keywords
                   {"const": {"maxLength": HUGE}, "enum": [{"maxItems": HUGE}]},
                   _nested(S.MAX_DEPTH // 2 - 1)):
        S.check_schema(schema)


def test_nested_pattern_repetitions_multiply_and_nest():
    with pytest.raises(S.SchemaTooLarge, match="expands to"):
        S.check_pattern("((a{0,50}){0,50}){0,50}")
    with pytest.raises(S.SchemaTooLarge, match="nest"):
        S.check_pattern("(((a{0,200}){0,200}){0,200})")
    with pytest.raises(S.SchemaTooLarge, match="characters"):
        S.check_pattern("a" * (S.MAX_PATTERN_CHARS + 1))


def test_a_deep_schema_is_walked_without_recursion():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(S.SchemaTooLarge, match=f"depth {S.MAX_DEPTH + 1} > {S.MAX_DEPTH}"):
        S.check_schema({"enum": [1], "allOf": deep})


def test_grammar_cache_keys_ignore_key_order_and_evict_the_oldest():
    assert schema_key({"a": 1, "b": [1, 2]}) == schema_key(json.loads('{"b": [1,2], "a": 1}'))
    assert schema_key({"a": 1}) != schema_key({"a": 2})
    cache = GrammarCache(size=2)
    cache.put("x", "gx")
    cache.put("y", "gy")
    assert cache.get("x") == ("gx", None)   # x is now the most recent
    cache.put("z", "gz")
    assert cache.get("y") is None and cache.get("x") is not None and cache.get("z") is not None
    assert (cache.hits, cache.misses) == (3, 1)


# --- a real runner process ------------------------------------------------------------------------

@pytest.fixture
def runner(tiny_gguf):
    r = Runner({"name": "t", "path": str(tiny_gguf), "n_ctx": 512, "parallel": 2})
    r.ready()
    yield r
    r.close()


def test_the_runner_refuses_a_huge_schema_itself_and_its_other_stream_goes_on(runner):
    runner.generate("plain", {"max_tokens": 40, **GREEDY}, kind="chat", messages=USER)
    for limit, schema in huge_schemas().items():
        runner.generate(limit, {"max_tokens": 4, "json_schema": schema}, kind="chat", messages=USER)
    texts, final, _ = runner.collect(["plain", *huge_schemas()], timeout=60)
    for limit in huge_schemas():
        assert final[limit]["event"] == "error" and final[limit]["code"] == "schema_too_large"
        assert limit in final[limit]["message"], final[limit]
    assert final["plain"]["event"] == "done" and final["plain"]["usage"]["completion_tokens"] == 40
    assert runner.proc.poll() is None


def test_a_second_identical_schema_is_a_cache_hit_and_still_constrains(runner):
    for req_id in ("first", "second"):
        runner.generate(req_id, {"max_tokens": 300, "json_schema": BOUNDED_SCHEMA, **GREEDY},
                        kind="chat", messages=USER)
        texts, final, _ = runner.collect([req_id], timeout=60)
        assert final[req_id]["finish_reason"] == "stop", final[req_id]
        jsonschema.validate(json.loads(texts[req_id]), BOUNDED_SCHEMA)
    stats = runner.stats()
    assert (stats["grammar_cache_misses"], stats["grammar_cache_hits"]) == (1, 1)


def test_a_request_cancelled_while_its_grammar_builds_ends_once(runner):
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(200)}}
    runner.generate("c", {"max_tokens": 5, "json_schema": schema}, kind="chat", messages=USER)
    runner.send(op="cancel", id="c")
    _, final, log = runner.collect(["c"], timeout=30)
    assert final["c"]["event"] == "done" and final["c"]["finish_reason"] == "cancelled"
    runner.generate("after", {"max_tokens": 3, **GREEDY}, kind="chat", messages=USER)
    _, final, log2 = runner.collect(["after"], timeout=30)
    assert final["after"]["event"] == "done"
    assert not [e for e in log + log2 if e.get("id") == "c" and e is not final.get("c")
                and e["event"] in ("queued", "token", "error")]


def test_tokens_sampled_off_the_loop_carry_their_logprobs(runner):
    runner.generate("lp", {"max_tokens": 300, "json_schema": BOUNDED_SCHEMA, "logprobs": True,
                           "top_logprobs": 2, **GREEDY}, kind="chat", messages=USER)
    texts, final, log = runner.collect(["lp"], timeout=60)
    jsonschema.validate(json.loads(texts["lp"]), BOUNDED_SCHEMA)
    entries = [e for ev in log if ev["event"] == "token" for e in ev.get("logprobs", [])]
    assert len(entries) == final["lp"]["usage"]["completion_tokens"]
    assert all(e["logprob"] <= 0 and len(e["top_logprobs"]) == 2 for e in entries)


def test_a_grammar_stream_cancelled_mid_generation_frees_its_slot(runner):
    schema = {"type": "array", "items": {"type": "integer"}}
    # an array the grammar cannot close within max_tokens: only the cancel can end it early
    endless = {**schema, "minItems": 300}
    runner.generate("long", {"max_tokens": 400, "json_schema": endless, "temperature": 1.0,
                             "seed": 1}, kind="chat", messages=USER)
    while runner.next()["event"] != "token":
        pass
    runner.send(op="cancel", id="long")
    _, final, _ = runner.collect(["long"], timeout=30)
    assert final["long"]["finish_reason"] == "cancelled"
    runner.generate("next", {"max_tokens": 5, "json_schema": schema, **GREEDY}, kind="chat",
                    messages=USER)
    _, final, _ = runner.collect(["next"], timeout=30)
    assert final["next"]["event"] == "done" and runner.stats()["active"] == 0


# --- a real engine --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def engine(tmp_path_factory, tiny_gguf):
    config = {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(tiny_gguf),
                          "n_ctx": 1024, "parallel": 2}],
              "routes": [{"name": "default", "target": "tiny"}]}
    with running_engine(config, tmp_path_factory.mktemp("grammar-limits")) as eng:
        yield eng


def tool(schema: dict) -> dict:
    return {"type": "function", "function": {"name": "f", "parameters": schema}}


def five_paths(schema: dict) -> dict[str, tuple[str, dict]]:
    """The five ways a request asks for grammar-constrained output: path and body."""
    anthropic_tool = {"name": "f", "input_schema": schema}
    return {
        "chat response_format": ("/v1/chat/completions", {
            "model": "tiny", "messages": USER, "max_tokens": 4,
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}}),
        "chat forced tool": ("/v1/chat/completions", {
            "model": "tiny", "messages": USER, "max_tokens": 4, "tools": [tool(schema)],
            "tool_choice": {"type": "function", "function": {"name": "f"}}}),
        "responses text.format": ("/v1/responses", {
            "model": "tiny", "input": "hi", "max_output_tokens": 16, "store": False,
            "text": {"format": {"type": "json_schema", "name": "x", "schema": schema}}}),
        "messages output_config.format": ("/v1/messages", {
            "model": "tiny", "messages": USER, "max_tokens": 4,
            "output_config": {"format": {"type": "json_schema", "schema": schema}}}),
        "messages forced tool": ("/v1/messages", {
            "model": "tiny", "messages": USER, "max_tokens": 4, "tools": [anthropic_tool],
            "tool_choice": {"type": "tool", "name": "f"}}),
    }


def _stream_plain(engine, out: dict, max_tokens: int = 60) -> None:
    body = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "stream": True,
            "max_tokens": max_tokens, "temperature": 0}
    started, first, finish = time.monotonic(), None, None
    with engine.client() as c, c.stream("POST", "/v1/chat/completions", json=body) as r:
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choice = json.loads(line[6:])["choices"][0]
            if first is None and choice["delta"].get("content"):
                first = time.monotonic() - started
            finish = choice.get("finish_reason") or finish
    out.update(status=r.status_code, ttft=first, finish=finish)


def test_five_paths_refuse_a_20000_bound_by_name_and_the_runner_lives_on(engine):
    with engine.client() as c:   # a runner up before the refusals, to check it outlives them
        assert c.post("/v1/chat/completions", json={"model": "tiny", "messages": USER,
                                                    "max_tokens": 1}).status_code == 200
    pids = engine.runner_pids()
    assert len(pids) == 1
    plain: dict = {}
    streaming = threading.Thread(target=_stream_plain, args=(engine, plain, 200))
    streaming.start()
    with engine.client() as c:
        for name, (path, body) in five_paths({"type": "string", "maxLength": HUGE}).items():
            r = c.post(path, json=body)
            assert r.status_code == 400, (name, r.text)
            error = r.json()["error"]
            assert error["type"] == "invalid_request_error", (name, error)
            assert f"maxLength {HUGE} > {S.MAX_REPETITION}" in error["message"], (name, error)
            if path != "/v1/messages":   # Anthropic's error shape has no code
                assert error["code"] == "schema_too_large", (name, error)
    streaming.join(timeout=60)
    assert plain["status"] == 200 and plain["finish"] == "length", plain
    assert engine.runner_pids() == pids


def test_a_normal_schema_still_constrains_every_path(engine):
    with engine.client() as c:
        r = c.post("/v1/chat/completions", json={
            "model": "tiny", "messages": USER, "max_tokens": 300, "temperature": 0,
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "b", "schema": BOUNDED_SCHEMA}}})
        assert r.status_code == 200, r.text
        jsonschema.validate(json.loads(r.json()["choices"][0]["message"]["content"]), BOUNDED_SCHEMA)
        for name, (path, body) in five_paths(BOUNDED_SCHEMA).items():
            assert c.post(path, json=body).status_code == 200, name


def test_a_big_allowed_grammar_does_not_hold_up_a_plain_chats_first_token(engine):
    # near MAX_GRAMMAR_BYTES: 60 fields of 100 values each
    big = {"type": "object", "properties": {
        f"field_{i}": {"enum": [f"shared prefix value {j:04d}" for j in range(100)]}
        for i in range(60)}}
    S.check_schema(big)
    unloaded = []
    for _ in range(3):
        out: dict = {}
        _stream_plain(engine, out, max_tokens=4)
        unloaded.append(out["ttft"])
    loaded = []
    for i in range(3):
        holder: dict = {}
        grammar = threading.Thread(target=lambda: holder.update(r=httpx.post(
            engine.url + "/v1/chat/completions", timeout=120, json={
                "model": "tiny", "messages": USER, "max_tokens": 8, "seed": i,
                "response_format": {"type": "json_schema",
                                    "json_schema": {"name": "big", "schema": {**big, "title": str(i)}}}})))
        grammar.start()
        time.sleep(0.05)   # the grammar request reaches the runner first
        out = {}
        _stream_plain(engine, out, max_tokens=4)
        loaded.append(out["ttft"])
        grammar.join(timeout=120)
        assert holder["r"].status_code == 200, holder["r"].text
    base = statistics.median(unloaded)
    print(f"plain chat TTFT: unloaded {unloaded}, beside a big grammar {loaded}")
    assert statistics.median(loaded) < base * 3 + 1.0, (unloaded, loaded)   # slack for busy CI


# --- the built-in SmolLM2: a 49k vocabulary, where the grammar step is expensive ----------------

WIDE_ENUM = {"type": "array", "minItems": 6, "maxItems": 6,
             "items": {"enum": [f"shared prefix value {j:04d}" for j in range(S.MAX_ENUM)]}}


def _inter_token_s(runner, req_id: str, others: list[str], timeout=120):
    """Seconds from the request's first token to its done event, and the others' texts."""
    first = end = None
    texts = {i: "" for i in [req_id, *others]}
    final = {}
    deadline = time.monotonic() + timeout
    while len(final) < len(texts):
        event = runner.next(timeout=max(deadline - time.monotonic(), 0.01))
        if event["event"] == "token" and event["id"] in texts:
            texts[event["id"]] += event["text"]
            if event["id"] == req_id and first is None:
                first = time.monotonic()
        elif event["event"] in ("done", "error") and event.get("id") in texts:
            final[event["id"]] = event
            if event["id"] == req_id:
                end = time.monotonic()
    return end - first, texts, final


@pytest.mark.slow
def test_the_widest_allowed_grammar_does_not_slow_another_streams_tokens():
    r = Runner({"name": "smol", "path": "builtin:smollm2-135m-instruct", "n_ctx": 512,
                "parallel": 2})
    try:
        r.ready()
        plain = {"max_tokens": 48, **GREEDY}
        ask = [{"role": "user", "content": "Tell me about the sea."}]
        r.generate("warm", plain, kind="chat", messages=ask)
        _inter_token_s(r, "warm", [])
        r.generate("alone", plain, kind="chat", messages=ask)
        alone, _, _ = _inter_token_s(r, "alone", [])
        r.generate("grammar", {"max_tokens": 200, "json_schema": WIDE_ENUM, **GREEDY},
                   kind="chat", messages=[{"role": "user", "content": "Pick six values."}])
        time.sleep(0.3)   # its grammar built and its first grammar steps under way
        r.generate("beside", plain, kind="chat", messages=ask)
        beside, texts, final = _inter_token_s(r, "beside", ["grammar"])
        print(f"plain stream, 48 tokens: alone {alone:.2f} s, beside the widest enum grammar "
              f"{beside:.2f} s")
        assert final["grammar"]["event"] == "done", final["grammar"]
        jsonschema.validate(json.loads(texts["grammar"]), WIDE_ENUM)
        assert final["beside"]["usage"]["completion_tokens"] == 48
        assert beside < alone * 2 + 0.5, (alone, beside)
    finally:
        r.close()
