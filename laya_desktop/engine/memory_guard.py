"""What the memory guard sees: a telemetry sample and the served models, as memory_policy's inputs.

Plain translation, no I/O: the scheduler (engine/scheduler.py) takes a sample, turns it into the
loaded models and the machine's memory here, asks memory_policy what to do, and carries it out.
"""
from __future__ import annotations

from typing import Callable

from laya_desktop.engine.memory_policy import LoadedModel, MemoryState
from laya_desktop.engine.served_model import ServedModel
from laya_desktop.telemetry.model_sample import ModelSample


def loaded_models(sample: dict, served_by_name: Callable[[str], ServedModel | None],
                  admitted: dict[str, tuple[object, int]],
                  with_loading: bool = False) -> list[LoadedModel]:
    """The sampled runners that are up (and, `with_loading`, those loading). `admitted` holds the
    RAM estimate each runner was let in with, by the handle it was made for: the part of it not
    resident yet is spoken for."""
    out = []
    for name, entry in _records(sample).items():
        served = served_by_name(name)
        if served is None or served.handle is None or entry.pid is None:
            continue
        if not (served.handle.is_ready or (with_loading and served.handle.is_loading)):
            continue
        memory = entry.memory_bytes
        handle, estimate = admitted.get(name, (None, 0))
        reserved = max(0, estimate - memory) if handle is served.handle else 0
        out.append(LoadedModel(
            name=name, pinned=served.config.keep_in_memory,
            busy=served.busy,  # a load under way is never evicted
            last_used=served.last_active,
            memory_bytes=memory, vram_bytes=entry.vram or 0, reserved_bytes=reserved))
    return out


def _records(sample: dict) -> dict[str, ModelSample]:
    return {name: ModelSample.from_json(entry) for name, entry in sample.get("models", {}).items()}


def memory_state(sample: dict, loaded: list[LoadedModel]) -> MemoryState:
    records = _records(sample)
    gpus = sample.get("gpus") or []
    mapped = sum(records[m.name].shared or 0 for m in loaded if m.name in records)
    return MemoryState(ram_total=sample["ram_total"], ram_available=sample["ram_available"],
                       ram_used=sample["ram_used"],
                       vram_total=sum(g.get("total") or 0 for g in gpus),
                       vram_used=sum(g.get("used") or 0 for g in gpus), mapped_bytes=mapped)


def private_bytes(sample: dict, name: str) -> int:
    entry = sample.get("models", {}).get(name)
    return (ModelSample.from_json(entry).private or 0) if entry else 0
