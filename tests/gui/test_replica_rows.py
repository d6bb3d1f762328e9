"""The Models view's row of a remote model shows its health, and the Requests view its session,
both from a real engine's answers (GET /admin/models, /admin/requests) fed to the table models."""
from __future__ import annotations

import pytest

from engine_harness import running_engine
from laya_desktop.gui.registry_model import COLUMNS as MODEL_COLUMNS, RegistryModel
from laya_desktop.gui.request_log_model import COLUMNS as LOG_COLUMNS, RequestLogModel
from replica_upstream import ReplicaProcess, free_port


@pytest.fixture(scope="module")
def engine_answers(tmp_path_factory):
    replica = ReplicaProcess("live").start()
    dead = f"http://127.0.0.1:{free_port()}/v1"   # nothing listens there
    config = {"models": [
        {"name": "dead", "backend": "openai", "base_url": dead, "health": {"eject_after": 1}},
        {"name": "live", "backend": "openai", "base_url": replica.base_url}],
        "routes": [{"name": "pair", "targets": ["dead", "live"]}]}
    try:
        with running_engine(config, tmp_path_factory.mktemp("rows")) as eng, eng.client() as c:
            for _ in range(2):
                r = c.post("/v1/chat/completions", headers={"X-Laya-Session": "s1"}, json={
                    "model": "auto", "messages": [{"role": "user", "content": "hi"}]})
                assert r.status_code == 200, r.text
            models = c.get("/admin/models").json()["models"]
            requests = c.get("/admin/requests").json()["requests"]
            yield config["models"], models, requests
    finally:
        replica.kill()


def test_a_remote_row_shows_up_or_ejected_with_its_error(qapp, engine_answers):
    configs, live, _ = engine_answers
    model = RegistryModel()
    model.set_configs(configs)
    model.set_live(live)
    state = MODEL_COLUMNS.index("State")
    dead, alive = model.index(0, state), model.index(1, state)
    assert dead.data().startswith("ejected: ") and "unreachable" in dead.data()
    assert "unreachable" in dead.data(0x03)   # ToolTipRole: the whole last error
    assert alive.data() == "up"


def test_the_request_log_shows_the_session_and_whether_affinity_chose(qapp, engine_answers):
    _, _, requests = engine_answers
    log = RequestLogModel()
    log.add(requests)
    column = LOG_COLUMNS.index("Session")
    newest, oldest = log.index(0, column).data(), log.index(1, column).data()
    session = requests[0]["session"]
    assert newest == f"{session} (same target)" and oldest == f"{session} (by strategy)"
    assert log.index(0, column).data(0x03) == "session key from: header"
