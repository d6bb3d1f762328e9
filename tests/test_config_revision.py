"""The config's revision: GET /admin/config answers an ETag, PUT takes If-Match and answers 409
on a stale base, so that no client overwrites a hand edit (or another client's) it never saw."""
from __future__ import annotations

import time

import yaml

from engine_harness import running_engine
from laya_desktop.config.revision import if_match_holds


def _config(gguf) -> dict:
    return {"models": [{"name": "tiny", "backend": "llama_cpp", "path": str(gguf), "n_ctx": 128,
                        "parallel": 1, "idle_ttl_s": 0}],
            "routes": [{"name": "default", "target": "tiny"}]}


def test_if_match_reads_lists_stars_and_weak_tags():
    assert if_match_holds('"abc"', '"abc"')
    assert if_match_holds('"x", "abc"', '"abc"')
    assert if_match_holds("*", '"abc"')
    assert if_match_holds('W/"abc"', '"abc"')
    assert not if_match_holds('"abd"', '"abc"')
    assert not if_match_holds("abc", '"abc"')       # an entity tag is quoted
    assert not if_match_holds("", '"abc"')


def test_put_with_a_stale_revision_is_409_and_changes_nothing(tiny_gguf, tmp_path):
    with running_engine(_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        r = c.get("/admin/config")
        first, config = r.headers["etag"], r.json()
        assert first.startswith('"') and first.endswith('"')
        assert c.get("/admin/config").headers["etag"] == first       # stable while unchanged

        config["routes"].insert(0, {"name": "code", "match": {"tags": ["code"]}, "target": "tiny"})
        r = c.put("/admin/config", json=config, headers={"If-Match": first})
        assert r.status_code == 200, r.text
        second = r.headers["etag"]
        assert second != first and c.get("/admin/config").headers["etag"] == second

        on_disk = eng.config_path.read_bytes()
        stale = dict(config, routes=[{"name": "other", "target": "tiny"}])
        r = c.put("/admin/config", json=stale, headers={"If-Match": first})
        assert r.status_code == 409, r.text
        error = r.json()["error"]
        assert error["code"] == "config_conflict" and error["etag"] == second
        assert "nothing was changed" in error["message"]
        assert eng.config_path.read_bytes() == on_disk
        assert [x["name"] for x in c.get("/admin/config").json()["routes"]] == ["code", "default"]

        # without If-Match, or with *, a PUT applies as before (scripts, `curl -T`)
        assert c.put("/admin/config", json=stale, headers={"If-Match": "*"}).status_code == 200
        assert c.put("/admin/config", json=config).status_code == 200


def test_a_hand_edit_makes_the_revision_a_client_holds_stale(tiny_gguf, tmp_path):
    with running_engine(_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        r = c.get("/admin/config")
        held, config = r.headers["etag"], r.json()
        edited = yaml.safe_load(eng.config_path.read_text())
        edited["routes"].insert(0, {"name": "by-hand", "target": "tiny"})
        eng.config_path.write_text(yaml.safe_dump(edited, sort_keys=False))
        deadline = time.monotonic() + 10
        while c.get("/admin/config").headers["etag"] == held:
            assert time.monotonic() < deadline, "the hand edit was not applied"
            time.sleep(0.1)

        config["routes"].insert(0, {"name": "from-gui", "target": "tiny"})
        r = c.put("/admin/config", json=config, headers={"If-Match": held})
        assert r.status_code == 409
        assert "by-hand" in eng.config_path.read_text()                 # the hand edit stays
        assert [x["name"] for x in c.get("/admin/config").json()["routes"]][0] == "by-hand"


def test_the_revision_is_the_same_after_a_restart(tiny_gguf, tmp_path):
    with running_engine(_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        before = c.get("/admin/config").headers["etag"]
    with running_engine(_config(tiny_gguf), tmp_path) as eng, eng.client() as c:
        assert c.get("/admin/config").headers["etag"] == before
