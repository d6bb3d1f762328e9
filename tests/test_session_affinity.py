"""Session affinity as pure policy: the session key a request carries, the bounded table with its
TTL (a fake clock), and how the remembered target is put first or not."""
from __future__ import annotations

from laya_desktop.routing.session_affinity import (AffinityTable, response_id_in, session_key,
                                                   short_hash, with_affinity)

TOOLS = [{"type": "function", "function": {"name": "shell", "parameters": {}}}]


def chat(*turns, system="You are terse.", tools=TOOLS):
    messages = [{"role": "system", "content": system}] if system else []
    messages += [{"role": role, "content": text} for role, text in turns]
    return {"messages": messages, "tools": tools}


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_client_key_wins_in_its_order():
    body = {"prompt_cache_key": "codex-1", "metadata": {"user_id": "u-7"}}
    headers = {"x-laya-session": "s-9"}
    assert session_key(body, chat(("user", "hi")), headers)[:2] == ("h:s-9", "header")
    assert session_key(body, chat(("user", "hi")), {})[:2] == ("k:codex-1", "prompt_cache_key")
    assert session_key({"metadata": {"user_id": "u-7"}}, chat(("user", "hi")), {})[:2] == \
        ("u:u-7", "metadata.user_id")
    assert session_key({}, chat(("user", "hi")), {}, unresolved_previous="resp_1")[:2] == \
        ("r:resp_1", "previous_response_id")
    assert all(session_key(body, chat(("user", "hi")), {})[2] for body in
               ({"prompt_cache_key": "x"}, {"metadata": {"user_id": "y"}}))


def test_the_prefix_hash_stays_the_same_as_the_conversation_grows():
    first = session_key({}, chat(("user", "fix the bug")), {})
    later = session_key({}, chat(("user", "fix the bug"), ("assistant", "done"),
                                 ("user", "now add a test")), {})
    assert first[0] == later[0] and first[1] == "prefix"
    assert first[2] is False and later[2] is True   # followed from the second turn on


def test_the_prefix_hash_tells_conversations_apart():
    base = session_key({}, chat(("user", "fix the bug")), {})[0]
    assert session_key({}, chat(("user", "write docs")), {})[0] != base
    assert session_key({}, chat(("user", "fix the bug"), system="Be verbose."), {})[0] != base
    other_tools = [{"type": "function", "function": {"name": "browse"}}]
    assert session_key({}, chat(("user", "fix the bug"), tools=other_tools), {})[0] != base
    assert session_key({}, {"prompt": "x"}, {}) is None    # no conversation: no key


def test_the_short_hash_names_a_key_without_showing_it():
    assert len(short_hash("k:secret")) == 8 and "secret" not in short_hash("k:secret")
    assert short_hash("k:a") != short_hash("k:b")


def test_the_table_forgets_after_its_ttl_and_beyond_its_size():
    clock = Clock()
    table = AffinityTable(size=2, clock=clock)
    table.put("r", "s1", "a", ttl_s=60)
    clock.now += 59
    assert table.get("r", "s1") == "a"
    clock.now += 2
    assert table.get("r", "s1") is None and len(table) == 0
    for key, model in (("s1", "a"), ("s2", "b"), ("s3", "a")):
        table.put("r", key, model, ttl_s=60)
    assert len(table) == 2 and table.get("r", "s1") is None and table.get("r", "s3") == "a"
    assert table.get("other-rule", "s3") is None   # a rule's sessions are its own


def test_a_used_entry_lives_on():
    clock = Clock()
    table = AffinityTable(clock=clock)
    table.put("r", "s", "a", ttl_s=10)
    for _ in range(5):
        clock.now += 8
        assert table.get("r", "s") == "a"
        table.put("r", "s", "a", ttl_s=10)


def test_the_remembered_target_goes_first_only_while_up_and_with_room():
    def up(m):
        return m != "down"

    def room(m):
        return m != "full"

    assert with_affinity(["a", "b", "c"], "b", up, room) == (["b", "a", "c"], True)
    assert with_affinity(["a", "b"], "a", up, room) == (["a", "b"], True)
    assert with_affinity(["a", "full"], "full", up, room) == (["a", "full"], False)
    assert with_affinity(["a", "b"], "down", up, room) == (["a", "b"], False)
    assert with_affinity(["a", "b"], None, up, room) == (["a", "b"], False)
    assert with_affinity(["a", "b"], "gone", up, room) == (["a", "b"], False)   # left the rule


def test_a_relayed_responses_answer_gives_its_id():
    body = b'{"id":"resp_abc123","object":"response","output":[{"id":"msg_1"}]}'
    assert response_id_in(body) == "resp_abc123"
    stream_tail = (b'event: response.completed\ndata: {"type":"response.completed",'
                   b'"response":{"id": "resp_9", "status":"completed"}}\n\n')
    assert response_id_in(stream_tail) == "resp_9"
    assert response_id_in(b'{"id":"chatcmpl-1"}') is None
