"""The admin API as data (admin_api/calls.py): each call's method, quoted path, body and typed
answer, checked on its own and sent to a real engine by the command line's client, so that the
GUI, `laya ps/load/unload` and the load tester cannot drift apart again."""
from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from engine_harness import running_engine
from laya_desktop.admin_api import calls
from laya_desktop.admin_api.answers import ConfigApplied, ConfigRevision, Page
from laya_desktop.admin_api.errors import AdminError
from laya_desktop.control.admin_client import AdminClient, EngineRefused, EngineUnreachable
from laya_desktop.loadtest.sweep import EngineWatch
from laya_desktop.telemetry.events import EventKind

ODD = "tiny #2?/x"   # every character that breaks an unquoted path: '#', '?', '/', ' '


def test_names_are_quoted_into_one_path_segment():
    assert calls.load(ODD).path == "/admin/models/tiny%20%232%3F%2Fx/load"
    assert calls.unload("plain").path == "/admin/models/plain/unload"
    assert calls.load("a").method == "POST" and calls.load("a").timeout_s == calls.LOAD_TIMEOUT_S
    with pytest.raises(ValueError, match="model name"):
        calls.load("")


def test_queries_and_bodies_are_part_of_the_description():
    assert calls.events(41).path == "/admin/events?since=41"
    assert calls.route_stats(300).path == "/admin/stats?window_s=300"
    explain = calls.explain("hi", ["code"], "m")
    assert explain.body == {"messages": [{"role": "user", "content": "hi"}], "tags": ["code"],
                            "model": "m"}
    assert "model" not in calls.explain("hi", [], None).body
    put = calls.put_config({"models": []}, if_match='"r1"')
    assert (put.method, put.path, put.headers) == ("PUT", "/admin/config", {"If-Match": '"r1"'})
    assert calls.put_config({"models": []}).headers == {}


def test_answers_become_typed_objects():
    page = calls.events(0).answer(200, json.dumps({"seq": 7, "events": [
        {"seq": 6, "kind": "model_loaded"}, {"seq": 7, "kind": "from_a_newer_engine"},
        "not an event"]}).encode())
    assert isinstance(page, Page) and page.seq == 7 and page.newest == 7
    assert [e["kind"] for e in page.items] == [EventKind.MODEL_LOADED, "from_a_newer_engine"]
    assert page.items[0]["kind"] is EventKind.MODEL_LOADED
    revision = calls.config().answer(200, b'{"models": []}', {"ETag": '"abc"'})
    assert revision == ConfigRevision({"models": []}, '"abc"')
    applied = calls.put_config({}).answer(200, b'{"status": "applied", "config": {"a": 1}}',
                                          {"etag": '"n"'})
    assert applied == ConfigApplied("applied", {"a": 1}, '"n"')
    assert calls.models().answer(200, b'{"models": [{"name": "a"}, 3]}') == [{"name": "a"}]
    assert calls.telemetry(0).answer(200, b"{}") == Page(0, [])


def test_an_error_answer_is_raised_with_its_code_and_path_list():
    body = json.dumps({"error": {"message": "bad", "type": "invalid_config",
                                 "errors": [{"path": "models[0].name", "message": "empty"}]}})
    with pytest.raises(AdminError) as caught:
        calls.put_config({}).answer(400, body.encode())
    assert caught.value.status == 400 and caught.value.kind == "invalid_config"
    assert caught.value.describe() == "bad\nmodels[0].name: empty"
    with pytest.raises(AdminError, match="not JSON"):
        calls.models().answer(200, b"<html>")


@pytest.fixture(scope="module")
def engine(tiny_gguf, tmp_path_factory):
    config = {"server": {"host": "127.0.0.1"},
              "models": [{"name": ODD, "backend": "llama_cpp", "path": str(tiny_gguf),
                          "n_ctx": 128, "parallel": 1, "idle_ttl_s": 0}],
              "routes": [{"name": "default", "target": ODD}]}
    with running_engine(config, tmp_path_factory.mktemp("admin-client")) as eng:
        yield eng


def test_the_command_lines_client_loads_a_model_whose_name_needs_quoting(engine):
    with AdminClient(engine.url) as client:
        row = client.load(ODD)
        assert row.get("name") == ODD and row.get("state") == "ready", row
        assert [m["name"] for m in client.models() if m["state"] == "ready"] == [ODD]
        client.unload(ODD)
        assert [m["state"] for m in client.models()] != ["ready"]
        with pytest.raises(EngineRefused) as caught:
            client.load("no such model")
        assert caught.value.status == 404 and "no such model" in str(caught.value)
        events = client.send(calls.events(0))
        kinds = [e["kind"] for e in events.items if e.get("model") == ODD]
        assert EventKind.MODEL_LOADED in kinds and EventKind.MODEL_UNLOADED in kinds


def test_no_engine_is_a_clear_error():
    with AdminClient("http://127.0.0.1:9", timeout=2) as client:
        with pytest.raises(EngineUnreachable, match="no engine answers at http://127.0.0.1:9"):
            client.models()


def _load_and_unload(url: str) -> None:
    with AdminClient(url) as client:
        client.load(ODD)
        client.unload(ODD)


def test_the_load_testers_watch_reads_the_same_calls(engine):
    async def watch() -> tuple:
        async with httpx.AsyncClient(base_url=engine.url, timeout=10) as http:
            w = EngineWatch(http)
            mark = await w.mark()
            await asyncio.to_thread(_load_and_unload, engine.url)
            return mark, await w.since(mark), await w.memory_config()
    (_telemetry_seq, event_seq), (_samples, events), memory = asyncio.run(watch())
    assert events and all(e["seq"] > event_seq for e in events)
    assert EventKind.MODEL_LOADED in [e["kind"] for e in events]
    assert memory.get("guard") is True   # GET /admin/config, read through the same answer type
