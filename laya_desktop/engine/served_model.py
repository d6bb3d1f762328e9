"""One model as the engine serves it: its config, its queue, its runner (none for a remote model).

Callers ask it (`busy`, `answers_now`, `state`) instead of comparing state strings; the runner's
own state belongs to its RunnerHandle.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from laya_desktop.config.schema import ModelConfig
from laya_desktop.engine.model_queue import ModelQueue
from laya_desktop.engine.runner_handle import RunnerHandle
from laya_desktop.telemetry.model_sample import ModelState


class LoadRefused(Exception):
    """Admission control said no: the model would not fit in memory."""


# A served model's state is the one on the wire: its runner's, plus "busy" and "remote"; the same
# enum as the telemetry record's, which the GUI, /metrics and `laya ps` read too.
ServedState = ModelState


@dataclass
class ServedModel:
    config: ModelConfig
    queue: ModelQueue
    handle: RunnerHandle | None = None  # None for remote models
    last_used: float = 0.0
    requests_total: int = 0
    tokens_window: list = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def is_local(self) -> bool:
        return self.handle is not None

    @property
    def active(self) -> int:
        return self.queue.active

    @property
    def state(self) -> ServedState:
        if self.handle is None:
            return ServedState.REMOTE
        if self.handle.is_ready and self.queue.active > 0:
            return ServedState.BUSY
        return ServedState(self.handle.state)

    @property
    def busy(self) -> bool:
        """Not to be unloaded for an idle TTL or to make room: requests in flight or waiting,
        or a load under way. The one definition the guard and the idle unloads both use."""
        return (self.queue.active > 0 or self.queue.queued > 0
                or (self.handle is not None and self.handle.is_loading))

    @property
    def answers_now(self) -> bool:
        """Serves a request without a load first: a ready runner, or a remote model."""
        return self.handle is None or self.handle.is_ready

    @property
    def last_active(self) -> float:
        """Its last request, or its load if that came later: the LRU order of unloads."""
        loaded_at = self.handle.loaded_at if self.handle is not None else None
        return max(self.last_used, loaded_at or 0)

    def touch(self) -> None:
        self.last_used = time.time()
