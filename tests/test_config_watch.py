"""Hand edits of models.yaml are applied whole: once the file has held still, never half-way."""
from __future__ import annotations

import threading
import time

import yaml

from engine_harness import running_engine
from laya_desktop.engine.config_watch import EditSettler

A, B = (1, 10, 7), (2, 20, 7)


def test_an_edit_is_ready_only_after_holding_still():
    s = EditSettler(settle_s=0.75)
    assert not s.ready(A, applied=A, now=0.0)          # nothing new
    assert not s.ready(B, applied=A, now=1.0)          # just changed
    assert not s.ready(B, applied=A, now=1.5)          # not yet held for 0.75 s
    assert s.ready(B, applied=A, now=1.8)
    assert not s.ready(B, applied=B, now=2.0)          # read and applied: nothing new again


def test_a_file_still_changing_is_never_ready():
    s = EditSettler(settle_s=0.75)
    now = 0.0
    for size in range(1, 20):                          # a write every half second
        assert not s.ready((size, size, 7), applied=A, now=now)
        now += 0.5
    assert not s.ready((19, 19, 7), applied=A, now=now)
    assert s.ready((19, 19, 7), applied=A, now=now + 0.3)


def test_a_vanished_file_waits_for_the_next_one():
    s = EditSettler(settle_s=0.75)
    assert not s.ready(B, applied=A, now=0.0)
    assert not s.ready(None, applied=A, now=1.0)       # between an editor's unlink and rename
    assert not s.ready(B, applied=A, now=1.1)          # seen again: the moment starts again
    assert s.ready(B, applied=A, now=1.9)


def _config(gguf) -> dict:
    model = {"backend": "llama_cpp", "path": str(gguf), "n_ctx": 128, "parallel": 1,
             "idle_ttl_s": 0}
    # routes first, so that the file's first part (without tiny2) is a valid, smaller config
    return {"routes": [{"name": "default", "target": "tiny"}],
            "models": [{"name": "tiny", **model}, {"name": "tiny2", **model}]}


def test_a_slowly_written_file_is_not_applied_half_way(tiny_gguf, tmp_path):
    config = _config(tiny_gguf)
    with running_engine(config, tmp_path) as eng, eng.client() as c:
        assert c.post("/admin/models/tiny2/load").status_code == 200
        pid = _pid(c, "tiny2")
        assert pid
        edited = yaml.safe_dump({**config, "routes": [{"name": "edited", "target": "tiny"}]},
                                sort_keys=False)
        cut = edited.index("- name: tiny2")
        seen: list[list[str]] = []
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                seen.append([m["name"] for m in c.get("/admin/config").json()["models"]])
                time.sleep(0.05)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            with open(eng.config_path, "w") as f:   # in place, as a slow script or editor writes
                f.write(edited[:cut])
                f.flush()
                for _ in range(6):                  # a smaller valid config on disk for 1.8 s
                    time.sleep(0.3)
                    f.write("\n")
                    f.flush()
                f.write(edited[cut:])
            deadline = time.monotonic() + 10
            while c.get("/admin/config").json()["routes"][0]["name"] != "edited":
                assert time.monotonic() < deadline, "the whole edit was not applied"
                time.sleep(0.1)
        finally:
            done.set()
            watcher.join()
        assert seen and all(names == ["tiny", "tiny2"] for names in seen), seen
        unloads = [e for e in c.get("/admin/events").json()["events"]
                   if e["kind"] == "model_unloaded" and e.get("model") == "tiny2"]
        assert unloads == []
        assert _pid(c, "tiny2") == pid                 # the same runner, never restarted


def _pid(c, name: str):
    return [m["pid"] for m in c.get("/admin/models").json()["models"] if m["name"] == name][0]
