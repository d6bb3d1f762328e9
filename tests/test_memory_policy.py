"""Tables of cases for the pure memory policy (no processes, no clock)."""
from __future__ import annotations

import pytest

from laya_desktop.config.schema import MemoryConfig
from laya_desktop.engine.memory_policy import (
    GIB, LoadedModel, MemoryState, band_bytes, plan_admission, plan_emergency,
    plan_idle_unloads, pressure, release_target,
)

CFG = MemoryConfig(reserved_system_gb=2, ram_high_pct=90, vram_high_pct=92)
TOTAL = 16 * GIB
BAND = band_bytes(TOTAL)  # min(5 % of 16 GiB, 1 GiB) = 0.8 GiB


def ram(available_gib: float, used_gib: float | None = None, total: int = TOTAL, mapped_gib: float = 0,
        vram: tuple[float, float] = (0, 0)) -> MemoryState:
    available = int(available_gib * GIB)
    used = int(used_gib * GIB) if used_gib is not None else total // 2  # page cache aside
    return MemoryState(ram_total=total, ram_available=available, ram_used=used,
                       vram_total=int(vram[0] * GIB), vram_used=int(vram[1] * GIB),
                       mapped_bytes=int(mapped_gib * GIB))


def m(name, last_used, gib=1.0, pinned=False, busy=False, vram_gib=0.0) -> LoadedModel:
    return LoadedModel(name=name, pinned=pinned, busy=busy, last_used=last_used,
                       memory_bytes=int(gib * GIB), vram_bytes=int(vram_gib * GIB))


# -- band ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("total, band", [
    (8 * GIB, int(0.4 * GIB)),      # 5 % of a small machine
    (16 * GIB, int(0.8 * GIB)),
    (64 * GIB, GIB),                # capped at 1 GiB
    (0, 0),
])
def test_band_is_at_most_5_percent_and_1_gib(total, band):
    assert band_bytes(total) == band
    assert band_bytes(total) <= 0.10 * total or total == 0  # ARCHITECTURE.md: at most 10 % of RAM


# -- pressure -------------------------------------------------------------------------------------

@pytest.mark.parametrize("state, reasons, ram_over_gib", [
    (ram(8), None, 0),                                   # plenty
    (ram(2.0), None, 0),                                 # exactly at the reserve: holds
    (ram(1.5), ("ram_available",), 0.5),                 # under the 2 GiB reserve by 0.5
    (ram(3, used_gib=15), ("ram_used",), 15 - 14.4),     # 93.75 % used > 90 %
    (ram(1, used_gib=15), ("ram_available", "ram_used"), 1.0),  # both; the larger excess
    (ram(3, mapped_gib=1.5), ("ram_available",), 0.5),   # mapped weights are not really available
    (ram(8, vram=(80, 76)), ("vram_used",), 0),          # 95 % VRAM > 92 %
    (ram(8, vram=(80, 70)), None, 0),
    (ram(8, vram=(0, 0)), None, 0),                      # no GPU: never VRAM pressure
])
def test_pressure(state, reasons, ram_over_gib):
    p = pressure(state, CFG)
    if reasons is None:
        assert p is None
        return
    assert p.reasons == reasons
    assert p.ram_over_bytes == pytest.approx(ram_over_gib * GIB, abs=2)
    assert p.message


def test_pressure_vram_amount_and_message():
    p = pressure(ram(8, vram=(80, 76)), CFG)
    assert p.vram_over_bytes == 76 * GIB - int(80 * GIB * 0.92)
    assert "VRAM" in p.message and "92" in p.message


@pytest.mark.parametrize("available_gib, under_band_pressure", [
    (2.5, True),    # above the limit but inside the band
    (2.0 + 0.8 + 0.01, False),
])
def test_pressure_with_band(available_gib, under_band_pressure):
    state = ram(available_gib)
    assert pressure(state, CFG) is None
    assert (pressure(state, CFG, with_band=True) is not None) == under_band_pressure


# -- release target --------------------------------------------------------------------------------

@pytest.mark.parametrize("state, ram_gib, vram_gib", [
    (ram(8), 0, 0),                                   # no pressure: nothing to free
    (ram(2.5), 0, 0),                                 # inside the band but no limit crossed
    (ram(1.5), 0.5 + 0.8, 0),                         # back to the reserve, plus the band
    (ram(3, used_gib=15), 15 - 14.4 + 0.8, 0),
    (ram(8, vram=(80, 76)), 0, 76 - 80 * 0.92 + 1.0),  # VRAM band: min(5 % of 80, 1) = 1 GiB
])
def test_release_target(state, ram_gib, vram_gib):
    target = release_target(state, CFG)
    assert target.ram_bytes == pytest.approx(ram_gib * GIB, abs=GIB * 1e-6)
    assert target.vram_bytes == pytest.approx(vram_gib * GIB, abs=GIB * 1e-6)
    assert bool(target) == (ram_gib > 0 or vram_gib > 0)


# -- emergency ---------------------------------------------------------------------------------------

LOADED = [m("a", 10), m("b", 5), m("c", 1, pinned=True), m("d", 2, busy=True)]


@pytest.mark.parametrize("state, loaded, expected", [
    (ram(8), LOADED, []),                                                  # no pressure
    (ram(1), LOADED, ["b"]),                                               # LRU idle unpinned
    (ram(1), [m("a", 10), m("b", 5, busy=True)], ["a"]),                   # idle before busy, even if newer
    (ram(1), [m("c", 1, pinned=True), m("d", 2, busy=True)], ["d"]),      # busy as a last resort
    (ram(1), [m("c", 1, pinned=True)], []),                                # pinned never
    (ram(1), [], []),
    (ram(1), [m("x", 3), m("w", 3)], ["w"]),                               # ties broken by name
    # VRAM-only pressure: only models holding VRAM help
    (ram(8, vram=(24, 23)), [m("cpu", 1), m("gpu", 5, vram_gib=4)], ["gpu"]),
    (ram(8, vram=(24, 23)), [m("cpu", 1)], []),
    # RAM pressure: any model
    (ram(1), [m("cpu", 1), m("gpu", 5, vram_gib=4)], ["cpu"]),
])
def test_plan_emergency(state, loaded, expected):
    assert plan_emergency(state, loaded, CFG) == expected


def test_emergency_hysteresis_does_not_flap():
    """Release down to the band, then stop; a state inside the band neither triggers a new
    release nor blocks re-admitting a model that fits."""
    loaded = [m("a", 1, gib=0.6), m("b", 2, gib=0.6), m("c", 3, gib=0.6)]
    # 1. pressure: 1.8 GiB available < 2 GiB reserve -> unload a
    s1 = ram(1.8)
    assert plan_emergency(s1, loaded, CFG) == ["a"]
    # 2. next sample: 2.4 GiB available, over the limit but inside the band; the guard is
    #    releasing, so it goes on (b), while a guard that is not releasing would do nothing
    s2 = ram(2.4)
    assert plan_emergency(s2, loaded[1:], CFG, releasing=True) == ["b"]
    assert plan_emergency(s2, loaded[1:], CFG, releasing=False) == []
    # 3. 3.0 GiB available: past the band (2 + 0.8); release ends, c stays
    s3 = ram(3.0)
    assert plan_emergency(s3, loaded[2:], CFG, releasing=True) == []
    assert release_target(s3, CFG).ram_bytes == 0
    # 4. a model that fits comes back, and the state after the load has no pressure
    plan = plan_admission(int(0.6 * GIB), 0, s3, loaded[2:], CFG)
    assert plan.fits and plan.evict == []
    after = ram(3.0 - 0.6)
    assert pressure(after, CFG) is None
    # 5. a stable state inside the band over many samples never unloads anything
    for _ in range(20):
        assert plan_emergency(after, loaded[2:] + [m("a", 9, gib=0.6)], CFG) == []


# -- admission -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("estimate_gib, state, loaded, fits, evict", [
    (1, ram(8), [m("a", 1)], True, []),                                         # room already
    (6, ram(8), [m("a", 1)], True, []),                                         # 8 - 6 = 2 = reserve
    (6.5, ram(8), [m("a", 1), m("b", 2)], True, ["a"]),                          # one eviction enough
    (7.5, ram(8), [m("b", 2), m("a", 1)], True, ["a", "b"]),                     # LRU order, only as needed
    (7.5, ram(8), [m("a", 1, busy=True), m("b", 2)], False, []),                # busy not evicted for a load
    (7.5, ram(8), [m("a", 1, pinned=True), m("b", 2)], False, []),              # pinned never
    (20, ram(8), [m("a", 1), m("b", 2)], False, []),                             # cannot fit: evict nothing
    (1, ram(1), [], False, []),                                                  # already under the reserve
    (1, ram(8, used_gib=14.2), [], False, []),                                   # would pass 90 % used
    (1, ram(3, mapped_gib=0.5), [m("a", 1, gib=0.5)], True, ["a"]),              # effective available 2.5
])
def test_plan_admission(estimate_gib, state, loaded, fits, evict):
    plan = plan_admission(int(estimate_gib * GIB), 0, state, loaded, CFG)
    assert plan.fits is fits
    assert plan.evict == evict
    assert plan.needed_bytes == int(estimate_gib * GIB)
    assert plan.message


def test_refusal_message_names_needed_and_available():
    plan = plan_admission(20 * GIB, 0, ram(8), [m("a", 1)], CFG)
    assert not plan.fits and plan.evict == []
    assert "20.00 GiB" in plan.message
    assert "7.00 GiB" in plan.message  # 8 available + 1 freeable - 2 reserve
    assert "even after unloading" in plan.message
    assert plan.available_bytes == 7 * GIB


@pytest.mark.parametrize("estimate_vram_gib, loaded, fits, evict", [
    (4, [], True, []),                                            # 24 GiB GPU, 10 used, limit 22.08
    (13, [m("g", 1, gib=0.1, vram_gib=2)], True, ["g"]),
    (16, [m("g", 1, gib=0.1, vram_gib=2)], False, []),
])
def test_plan_admission_vram(estimate_vram_gib, loaded, fits, evict):
    state = ram(12, vram=(24, 10))
    plan = plan_admission(GIB, int(estimate_vram_gib * GIB), state, loaded, CFG)
    assert (plan.fits, plan.evict) == (fits, evict)
    if not fits:
        assert "VRAM" in plan.message


def test_admission_without_vram_figure_does_not_block():
    plan = plan_admission(GIB, 4 * GIB, ram(8), [], CFG)
    assert plan.fits
    assert plan.available_vram_bytes is None and plan.notes


# -- idle TTL ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("loaded, now, ttl, expected", [
    ([m("a", 0), m("b", 50)], 100, {"a": 60, "b": 60}, ["a"]),
    ([m("a", 0), m("b", 50)], 110, {"a": 60, "b": 60}, ["a", "b"]),   # exactly at the TTL counts
    ([m("a", 0)], 10_000, {"a": 0}, []),                              # 0 = never
    ([m("a", 0)], 10_000, {}, []),                                    # no TTL known: never
    ([m("a", 0, pinned=True)], 10_000, {"a": 1}, []),                 # pinned never
    ([m("a", 0, busy=True)], 10_000, {"a": 1}, []),                   # busy is not idle
    ([m("b", 5), m("a", 1)], 100, {"a": 10, "b": 10}, ["a", "b"]),    # oldest first
])
def test_plan_idle_unloads(loaded, now, ttl, expected):
    assert plan_idle_unloads(loaded, now, ttl) == expected


def test_policy_module_is_pure():
    """No I/O, logging or clock in the policy module (docs/ARCHITECTURE.md, Layers)."""
    import inspect

    import laya_desktop.engine.memory_policy as policy
    source = inspect.getsource(policy)
    for forbidden in ("import logging", "import time", "import os", "open(", "print(", "psutil"):
        assert forbidden not in source, forbidden
