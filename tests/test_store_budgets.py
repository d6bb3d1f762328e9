"""The stores that keep request data past the request are bounded in bytes, not only in entries:
the route log behind "What if..." (routing/route_log.py) and the Responses store
(engine/response_store.py). Least recent out first; a record's size is estimated from the
lengths of its texts."""
from __future__ import annotations

import sys

from laya_desktop.engine.response_store import ResponseStore, StoredResponse, messages_bytes
from laya_desktop.routing.route_log import RouteInputLog, entry_bytes, str_bytes

MiB = 1024 * 1024


def chat(text: str, tags=None, model="m") -> dict:
    body = {"model": model, "messages": [{"role": "user", "content": text}]}
    if tags is not None:
        body["tags"] = tags
    return body


# -- route log -------------------------------------------------------------------------------------

def test_route_log_drops_the_oldest_past_its_byte_budget():
    log = RouteInputLog(size=1000, max_bytes=1 * MiB)
    for i in range(100):
        log.record("/v1/chat/completions", chat(f"{i} " + "x" * 30_000), None)
    kept = log.recent()
    assert log.bytes <= 1 * MiB and 25 <= len(kept) <= 34   # 32k chars each (the text cap)
    assert kept[-1]["user_text"].startswith("99 ")          # the newest stays
    assert kept[0]["seq"] == 100 - len(kept) + 1             # the oldest went first
    assert log.bytes == sum(entry_bytes(e) for e in kept)


def test_route_log_still_bounded_by_count_and_resizable():
    log = RouteInputLog(size=5, max_bytes=64 * MiB)
    for i in range(20):
        log.record("/p", chat(str(i)), None)
    assert [e["user_text"] for e in log.recent()] == ["15", "16", "17", "18", "19"]
    log.resize(2)
    assert [e["user_text"] for e in log.recent()] == ["18", "19"]
    assert log.bytes == sum(entry_bytes(e) for e in log.recent())
    log.resize(0)
    log.record("/p", chat("x"), None)
    assert len(log) == 0 and log.bytes == 0


def test_route_log_charges_tags_and_model_names():
    # the caps (field_limits) stop these at the door; the budget holds even without them
    log = RouteInputLog(size=1000, max_bytes=8 * MiB)
    for _ in range(40):
        log.record("/v1/chat/completions",
                   chat("hi", tags=[f"t{i}" for i in range(40_000)], model="m" * 100_000), None)
    assert log.bytes <= 8 * MiB and len(log) < 40


def test_the_estimate_is_not_below_what_python_holds():
    text = "x" * 30_000
    assert str_bytes(text) >= sys.getsizeof(text) - 100
    wide = "ü" * 1000 + "日" * 1000
    assert str_bytes(wide) >= sys.getsizeof(wide) - 100
    log = RouteInputLog(size=10)
    log.record("/p", chat(text, tags=["a", "b"]), "c")
    (entry,) = log.recent()
    held = sum(sys.getsizeof(v) for v in entry.values()) + sys.getsizeof(entry)
    assert entry_bytes(entry) >= held


# -- Responses store -------------------------------------------------------------------------------

def stored(i: int, text_chars: int, body_bytes: int = 0) -> StoredResponse:
    messages = [{"role": "user", "content": "q" * text_chars},
                {"role": "assistant", "content": f"answer {i}"}]
    return StoredResponse(f"resp_{i}", messages, {"id": f"resp_{i}"},
                          {f"msg_{i}": messages[1:]}, body_bytes)


def test_response_store_drops_least_recently_used_past_its_byte_budget():
    store = ResponseStore(max_responses=1000, max_bytes=10 * MiB)
    for i in range(40):
        assert store.put(stored(i, 1 * MiB))
        if i >= 1:
            store.get("resp_0")            # read back every turn: the most recently used
    assert store.bytes <= 10 * MiB and 5 <= len(store) <= 10
    assert store.get("resp_0") is not None and store.get("resp_39") is not None
    assert store.get("resp_1") is None and store.item("msg_1") is None
    assert store.item("msg_39") == [{"role": "assistant", "content": "answer 39"}]


def test_response_store_charges_the_request_body():
    # metadata, tools, instructions: echoed in the stored response, charged by the body's length
    store = ResponseStore(max_bytes=50 * MiB)
    for i in range(40):
        store.put(stored(i, 10, body_bytes=8 * MiB))
    assert store.bytes <= 50 * MiB and len(store) == 3


def test_a_record_over_the_whole_budget_is_not_kept():
    store = ResponseStore(max_bytes=1 * MiB)
    store.put(stored(0, 10))
    assert not store.put(stored(1, 2 * MiB))
    assert store.get("resp_1") is None and store.get("resp_0") is not None


def test_putting_an_id_again_and_deleting_keep_the_count_right():
    store = ResponseStore(max_bytes=10 * MiB)
    store.put(stored(0, 1000))
    store.put(stored(0, 2000))
    assert len(store) == 1 and store.bytes == stored(0, 2000).estimated_bytes()
    assert store.delete("resp_0") and store.bytes == 0 and not store.delete("resp_0")


def test_a_chain_is_charged_its_whole_conversation():
    # each turn shares its predecessors' messages, and keeps them alive once they are dropped:
    # charging only the new turn would let a chain of big turns outgrow the budget
    store = ResponseStore(max_bytes=20 * MiB)
    conversation: list[dict] = []
    for i in range(30):
        conversation = [*conversation, {"role": "user", "content": "t" * MiB},
                        {"role": "assistant", "content": "ok"}]
        kept = store.put(StoredResponse(f"resp_{i}", conversation, {}, {}))
        assert kept == (i < 19), i           # turn 20 holds 20 MiB of text: over the budget
        assert store.bytes <= 20 * MiB
    assert store.get("resp_18") is not None and store.get("resp_19") is None
    assert len(store) == 1                   # resp_17 and resp_18 together are over it


def test_counts_strings_inside_parts_and_tool_calls():
    url = "data:image/png;base64," + "A" * 100_000
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c", "type": "function",
                     "function": {"name": "f", "arguments": "x" * 50_000}}]}]
    assert messages_bytes(messages) > 150_000
