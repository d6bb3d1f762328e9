"""Driving a runner backend in-process the way runner_main does: submit, then step until idle."""
from __future__ import annotations


def run(backend, *cmds, max_steps=5000) -> dict[str, list[dict]]:
    """Submit the commands (ids r0, r1, ... where a command has none) and step until idle: every
    event, per id, in order."""
    out: dict[str, list[dict]] = {}
    for i, cmd in enumerate(cmds):
        cmd = {**cmd, "id": cmd.get("id", f"r{i}")}
        out[cmd["id"]] = list(backend.submit(cmd))
    for _ in range(max_steps):
        if not backend.has_work():
            break
        for ev in backend.step():
            out.setdefault(ev["id"], []).append(ev)
    assert not backend.has_work()
    return out


def text_of(events) -> str:
    return "".join(e["text"] for e in events if e["event"] == "token")
