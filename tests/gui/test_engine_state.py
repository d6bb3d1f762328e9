"""EngineState, the GUI's one owner of the engine's state, against a real engine: one poll loop on
QtNetwork (no worker thread), one PUT per Apply whose answer is used, a change made elsewhere
followed, events typed by EventKind, the request log while followed, and a restarted engine."""
from __future__ import annotations

import threading

import httpx
import pytest

from engine_harness import running_engine
from laya_desktop.gui.engine_client import EngineClient
from laya_desktop.gui.engine_state import EngineState
from laya_desktop.telemetry.events import EventKind


class CountingClient(EngineClient):
    """The real client, with a record of every call it sends: (method, path without query)."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.sent: list[tuple[str, str]] = []

    def send(self, call, *args, **kw):
        self.sent.append((call.method, call.path.split("?")[0]))
        return super().send(call, *args, **kw)


@pytest.fixture(scope="module")
def engine(gui_tiny_gguf, tmp_path_factory):
    config = {"server": {"host": "127.0.0.1"},
              "models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gui_tiny_gguf),
                          "n_ctx": 128, "parallel": 1}],
              "routes": [{"name": "default", "target": "tiny"}]}
    with running_engine(config, tmp_path_factory.mktemp("engine-state")) as eng:
        yield eng


@pytest.fixture
def state(engine, qtbot):
    client = CountingClient(engine.url)
    state = EngineState(client, interval_ms=100)
    threads = threading.active_count()
    with qtbot.waitSignal(state.applied_changed, timeout=10000):
        state.start()                      # the first tick reads the config too
    yield state
    state.stop()
    assert threading.active_count() == threads   # polling started no thread
    client.abort()
    client.close()


def test_one_apply_is_one_put_whose_answer_is_used(state, qtbot):
    config = state.copy()
    config["routes"][0]["name"] = "everything"
    ticks_before = state.event_seq
    done = []
    state.client.sent.clear()
    state.apply(config, on_done=lambda ok, result: done.append((ok, result)))
    qtbot.waitUntil(lambda: bool(done), timeout=10000)
    assert done[0][0] is True and state.applied["routes"][0]["name"] == "everything"
    etag = state.etag
    assert etag
    # the engine's config_applied event comes through the poll; it names our revision: no re-read
    qtbot.waitUntil(lambda: state.event_seq > ticks_before, timeout=5000)
    qtbot.wait(300)
    config_calls = [c for c in state.client.sent if c[1] == "/admin/config"]
    assert config_calls == [("PUT", "/admin/config")]
    assert state.etag == etag


def test_a_change_made_elsewhere_reaches_the_subscribers(state, engine, qtbot):
    config = state.copy()
    config["routes"][0]["name"] = "by-another-client"
    with qtbot.waitSignal(state.changed_elsewhere, timeout=10000) as changed:
        httpx.put(engine.url + "/admin/config", json=config, timeout=30).raise_for_status()
    assert changed.args[0]["routes"][0]["name"] == "by-another-client"
    assert state.applied["routes"][0]["name"] == "by-another-client"


def test_a_stale_apply_is_a_conflict_and_the_config_is_read_again(state, engine, qtbot):
    stale = state.etag
    config = state.copy()
    config["routes"][0]["name"] = "theirs"
    with qtbot.waitSignal(state.changed_elsewhere, timeout=10000):
        httpx.put(engine.url + "/admin/config", json=config, timeout=30).raise_for_status()
    config["routes"][0]["name"] = "mine"
    with qtbot.waitSignal(state.conflict, timeout=10000) as conflict:
        state.apply(config, base=stale)
    assert conflict.args[0].status == 409
    assert state.applied["routes"][0]["name"] == "theirs"


def test_events_samples_models_and_the_followed_request_log(state, engine, qtbot):
    events, samples, models, requests = [], [], [], []
    state.events.connect(events.extend)
    state.samples.connect(samples.extend)
    state.models.connect(models.append)
    state.requests.connect(requests.extend)
    state.follow_requests(True)
    body = {"model": "tiny", "max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}]}
    httpx.post(engine.url + "/v1/chat/completions", json=body, timeout=60).raise_for_status()
    qtbot.waitUntil(lambda: any(e["kind"] is EventKind.MODEL_LOADED for e in events)
                    and bool(requests and samples and models), timeout=10000)
    assert requests[-1]["model"] == "tiny" and requests[-1]["status"] == 200
    assert [m["name"] for m in models[-1]] == ["tiny"]
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs))          # each event once, oldest first
    state.follow_requests(False)
    sent = len(state.client.sent)
    qtbot.wait(400)
    assert ("GET", "/admin/requests") not in state.client.sent[sent:]
    assert len(state.client.sent) > sent      # the poll goes on without the log


def test_a_failing_endpoint_is_reported_and_the_loop_goes_on(engine, qtbot):
    client = CountingClient("http://127.0.0.1:9")   # nothing listens there
    state = EngineState(client, interval_ms=50)
    with qtbot.waitSignal(state.poll_failed, timeout=5000) as failed:
        state.start()
    assert "telemetry" in failed.args[0] and "models" in failed.args[0]
    with qtbot.waitSignal(state.poll_failed, timeout=5000):
        pass                                  # the next tick tries again
    state.stop()
    client.abort()
    client.close()
