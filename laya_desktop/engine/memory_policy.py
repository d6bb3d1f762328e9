"""Which models to unload, and whether a new one fits: pure functions over plain data.

No I/O, no logging, no clock (docs/ARCHITECTURE.md, "policy apart from effects"): the scheduler
(engine/scheduler.py) gathers a MemoryState and the loaded models (engine/memory_guard.py), asks
these functions, and carries out the answer itself. Tests drive them with tables of cases.

Accounting. Weights loaded with mmap are page cache: the kernel counts them as *available*, and
under pressure drops them, after which the model re-reads its weights from disk on every token.
So a model's `memory_bytes` is its private (anonymous) memory plus the mapped weights it needs,
and `MemoryState.mapped_bytes` (the loaded models' mapped weights) is taken out of the kernel's
available figure: `effective_available = ram_available - mapped_bytes`. Evicting a model gives
back its `memory_bytes` in that same currency, and an estimate for a new model (weights + KV +
buffers) is spent from it.

Hysteresis. The guard starts releasing when a limit is crossed and keeps releasing (one model per
sample) until it is back under the limits by a band, so that it does not stop a hair under the
limit and fire again on the next sample. The band is min(5 % of total, 1 GiB) for RAM (and the
same rule over total VRAM): docs/ARCHITECTURE.md caps it at 10 % of RAM so that a model can be
loaded again once pressure is gone; 5 % / 1 GiB is enough to absorb sampling noise and the growth
of a busy KV cache while leaving room to reload. Admission, in turn, refuses a load that would
cross a limit, so a load can never itself trigger the guard.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from laya_desktop.config.schema import MemoryConfig

GIB = 1 << 30
MIB = 1 << 20
BAND_FRACTION = 0.05
BAND_CAP_BYTES = GIB


@dataclass(frozen=True)
class MemoryState:
    ram_total: int
    ram_available: int
    ram_used: int
    vram_total: int = 0
    vram_used: int = 0
    mapped_bytes: int = 0  # loaded models' mmap'ed weights, counted as available by the kernel

    @property
    def effective_available(self) -> int:
        return max(0, self.ram_available - self.mapped_bytes)


@dataclass(frozen=True)
class LoadedModel:
    name: str
    pinned: bool = False
    busy: bool = False          # requests active > 0
    last_used: float = 0.0      # any monotonic or wall clock; only the order matters
    memory_bytes: int = 0       # private memory + the mapped weights it needs
    vram_bytes: int = 0
    # The part of its admitted estimate not resident yet: all of it while the model loads, then
    # the KV cache and buffers it has not touched so far. Admission counts it as spoken for
    # (Ollama plans with its runners' estimates, not their current use); the emergency release
    # ignores it, since only memory really in use can run the machine out.
    reserved_bytes: int = 0


@dataclass(frozen=True)
class Pressure:
    reasons: tuple[str, ...]    # "ram_available", "ram_used", "vram_used"
    ram_over_bytes: int         # how far RAM is past the tightest crossed limit (0 if only VRAM)
    vram_over_bytes: int
    message: str


@dataclass(frozen=True)
class ReleaseTarget:
    ram_bytes: int
    vram_bytes: int

    def __bool__(self) -> bool:
        return self.ram_bytes > 0 or self.vram_bytes > 0


@dataclass(frozen=True)
class AdmissionPlan:
    evict: list[str]
    fits: bool
    needed_bytes: int           # the estimate
    available_bytes: int        # what the new model may use after the planned evictions
    message: str
    needed_vram_bytes: int = 0
    available_vram_bytes: int | None = None  # None: no VRAM figure (no GPU telemetry)
    freed_bytes: int = 0
    notes: list[str] = field(default_factory=list)


def band_bytes(total: int) -> int:
    """The hysteresis band for a pool of `total` bytes: min(5 %, 1 GiB), at most 10 % by design."""
    return int(min(total * BAND_FRACTION, BAND_CAP_BYTES))


def _ram_excess(state: MemoryState, cfg: MemoryConfig, margin: int) -> tuple[list[str], int]:
    """Limits crossed when each is tightened by `margin` bytes, and the largest excess."""
    reasons, over = [], 0
    reserved = int(cfg.reserved_system_gb * GIB)
    short = reserved + margin - state.effective_available
    if short > 0:
        reasons.append("ram_available")
        over = max(over, short)
    if state.ram_total > 0:
        high = int(state.ram_total * cfg.ram_high_pct / 100)
        excess = state.ram_used + margin - high
        if excess > 0:
            reasons.append("ram_used")
            over = max(over, excess)
    return reasons, over


def _vram_excess(state: MemoryState, cfg: MemoryConfig, margin: int) -> int:
    if state.vram_total <= 0:
        return 0
    high = int(state.vram_total * cfg.vram_high_pct / 100)
    return max(0, state.vram_used + margin - high)


def pressure(state: MemoryState, cfg: MemoryConfig, *, with_band: bool = False) -> Pressure | None:
    """Which limits are crossed, and by how much; None when all hold.

    `with_band` tightens every limit by the hysteresis band: the guard uses it while an
    emergency release is in progress, to keep going until it is back under by the band.
    """
    ram_margin = band_bytes(state.ram_total) if with_band else 0
    vram_margin = band_bytes(state.vram_total) if with_band else 0
    reasons, ram_over = _ram_excess(state, cfg, ram_margin)
    vram_over = _vram_excess(state, cfg, vram_margin)
    if vram_over > 0:
        reasons.append("vram_used")
    if not reasons:
        return None
    parts = []
    if "ram_available" in reasons:
        parts.append(f"available RAM {state.effective_available / GIB:.2f} GiB is under the reserved "
                     f"{cfg.reserved_system_gb:g} GiB")
    if "ram_used" in reasons:
        parts.append(f"RAM use {100 * state.ram_used / state.ram_total:.1f}% is over {cfg.ram_high_pct:g}%")
    if "vram_used" in reasons:
        parts.append(f"VRAM use {100 * state.vram_used / state.vram_total:.1f}% "
                     f"is over {cfg.vram_high_pct:g}%")
    if with_band:
        parts.append("(limits tightened by the hysteresis band)")
    return Pressure(tuple(reasons), ram_over, vram_over, "; ".join(parts))


def release_target(state: MemoryState, cfg: MemoryConfig) -> ReleaseTarget:
    """Bytes to free to get back under every limit plus the hysteresis band; zero when no limit is
    crossed (the band only matters once a release has started)."""
    if pressure(state, cfg) is None:
        return ReleaseTarget(0, 0)
    _, ram = _ram_excess(state, cfg, band_bytes(state.ram_total))
    vram = _vram_excess(state, cfg, band_bytes(state.vram_total))
    return ReleaseTarget(ram, vram)


def _lru(models) -> list[LoadedModel]:
    return sorted(models, key=lambda m: (m.last_used, m.name))


def plan_emergency(state: MemoryState, loaded: list[LoadedModel], cfg: MemoryConfig, *,
                   releasing: bool = False) -> list[str]:
    """The one model to unload now, or [] (the guard acts one model per sample, then looks again).

    Triggers when a limit is crossed; with `releasing` (the previous sample unloaded something)
    it goes on until back under the limits by the band. Least recently used unpinned idle model
    first, a busy one only as a last resort, a pinned one never. Under VRAM pressure alone only
    models holding VRAM are candidates.
    """
    p = pressure(state, cfg, with_band=releasing)
    if p is None:
        return []
    candidates = [m for m in loaded if not m.pinned]
    if p.ram_over_bytes <= 0:  # VRAM only: freeing RAM would not help
        candidates = [m for m in candidates if m.vram_bytes > 0]
    idle = [m for m in candidates if not m.busy]
    busy = [m for m in candidates if m.busy]
    for group in (idle, busy):
        if group:
            return [_lru(group)[0].name]
    return []


def plan_admission(estimate_bytes: int, estimate_vram: int, state: MemoryState,
                   loaded: list[LoadedModel], cfg: MemoryConfig) -> AdmissionPlan:
    """Make room for a model whose estimate is `estimate_bytes` of RAM and `estimate_vram` of VRAM.

    Evicts idle unpinned models, least recently used first, only as many as needed; busy and
    pinned models are never evicted for a load. Each loaded (or loading) model's `reserved_bytes`
    is taken from the room as if already in use, and comes back with it when it is evicted; so
    two loads admitted one after the other cannot both spend the same free memory, even while
    the first has not touched all of its own yet. Fits when, after the load, available RAM stays
    above the reserve, RAM use under ram_high_pct and VRAM under vram_high_pct. When even evicting
    every idle unpinned model is not enough, refuses without evicting anything.
    """
    reserved = int(cfg.reserved_system_gb * GIB)
    high_used = int(state.ram_total * cfg.ram_high_pct / 100) if state.ram_total > 0 else None
    have_vram = state.vram_total > 0
    high_vram = int(state.vram_total * cfg.vram_high_pct / 100) if have_vram else None
    promised = sum(m.reserved_bytes for m in loaded)  # estimates not resident yet

    def room(freed: int, freed_vram: int) -> tuple[int, int | None]:
        ram = state.effective_available - promised + freed - reserved
        if high_used is not None:
            ram = min(ram, high_used - (state.ram_used + promised - freed))
        vram = high_vram - (state.vram_used - freed_vram) if have_vram else None
        return ram, vram

    def fits(ram: int, vram: int | None) -> bool:
        if estimate_bytes > ram:
            return False
        return vram is None or estimate_vram <= 0 or estimate_vram <= vram

    notes = []
    if estimate_vram > 0 and not have_vram:
        notes.append("no VRAM figure (no GPU telemetry): the VRAM part is not checked")

    evict: list[str] = []
    freed = freed_vram = 0
    ram, vram = room(0, 0)
    for model in _lru(m for m in loaded if not m.pinned and not m.busy):
        if fits(ram, vram):
            break
        evict.append(model.name)
        freed += model.memory_bytes + model.reserved_bytes
        freed_vram += model.vram_bytes
        ram, vram = room(freed, freed_vram)

    ok = fits(ram, vram)
    if ok:
        if evict:
            message = (f"fits after unloading {', '.join(evict)}: needs {_fmt(estimate_bytes)}, "
                       f"{_fmt(ram)} available above the reserve")
        else:
            message = f"fits: needs {_fmt(estimate_bytes)}, {_fmt(ram)} available above the reserve"
        return AdmissionPlan(evict, True, estimate_bytes, max(ram, 0), message, estimate_vram, vram,
                             freed, notes)

    problems = []
    if estimate_bytes > ram:
        problems.append(f"needs {_fmt(estimate_bytes)} of RAM but only {_fmt(max(ram, 0))} is available "
                        f"above the {cfg.reserved_system_gb:g} GiB reserve / {cfg.ram_high_pct:g}% limit")
    if vram is not None and estimate_vram > vram:
        problems.append(f"needs {_fmt(estimate_vram)} of VRAM but only {_fmt(max(vram, 0))} is free "
                        f"under the {cfg.vram_high_pct:g}% limit")
    scope = ("even after unloading every idle unpinned model" if evict
             else "and no idle unpinned model can be unloaded")
    message = f"not enough memory to load: {'; '.join(problems)}, {scope}"
    return AdmissionPlan([], False, estimate_bytes, max(ram, 0), message, estimate_vram, vram, 0, notes)


def plan_idle_unloads(loaded: list[LoadedModel], now: float, ttl_by_name: dict[str, float]) -> list[str]:
    """Models idle for at least their TTL (seconds since last_used, on the same clock as `now`).

    A TTL of 0 (or none given) means never; pinned and busy models are never unloaded here.
    """
    out = []
    for m in _lru(loaded):
        ttl = ttl_by_name.get(m.name) or 0
        if m.pinned or m.busy or ttl <= 0:
            continue
        if now - m.last_used >= ttl:
            out.append(m.name)
    return out


def _fmt(n: int) -> str:
    if abs(n) >= GIB:
        return f"{n / GIB:.2f} GiB"
    return f"{n / MIB:.0f} MiB"
