"""Active health checks: a GET to each remote model whose `health.probe` is not none, every
`health.interval_s`, its outcome fed to ReplicaHealth like a request's.

`auto` asks the API's models list (`/v1/models`: vLLM, Ollama, LM Studio and llama-server all
answer it, and so do OpenAI's and Anthropic's APIs); a path such as `/health` (llama-server) is
asked on the upstream's origin. A 2xx answer within the timeout is up; anything else, a hang
included, is a failure: a stopped process still accepts connections, so only a timeout tells.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

import httpx

from laya_desktop.engine.remote import _openai_headers, api_root
from laya_desktop.engine.replica_health import ReplicaHealth

MAX_TIMEOUT_S = 5.0

log = logging.getLogger("laya.engine.health")


def probe_url(model) -> str | None:
    """Where a model's probe asks, or None when it has none."""
    probe = model.health.probe
    if probe == "none":
        return None
    if probe == "auto":
        return api_root(model) + "/models"
    url = httpx.URL(model.base_url)
    return str(url.copy_with(path=probe, query=None, fragment=None))


def probe_headers(model) -> dict:
    if model.backend == "anthropic":
        from laya_desktop.engine.remote_anthropic import auth_headers
        return auth_headers(model, {})
    headers = _openai_headers(model)
    headers.pop("Content-Type", None)
    return headers


class Prober:
    def __init__(self, health: ReplicaHealth, models: Callable[[], list]):
        self.health, self.models = health, models
        self._due: dict[str, float] = {}
        self._running: dict[str, asyncio.Task] = {}
        self._client: httpx.AsyncClient | None = None
        self._changed = asyncio.Event()

    def wake(self) -> None:
        """The config changed: probes may have been added, removed or retimed."""
        self._changed.set()

    async def run(self) -> None:
        """Sleeps until the next probe is due, or until the config changes: with no probe
        configured it never wakes on its own (an idle engine stays idle)."""
        try:
            while True:
                next_due = self._tick(time.monotonic())
                self._changed.clear()
                timeout = None if next_due is None else max(0.0, next_due - time.monotonic())
                try:
                    await asyncio.wait_for(self._changed.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
        finally:
            for task in self._running.values():
                task.cancel()
            if self._client is not None:
                await self._client.aclose()

    def _tick(self, now: float) -> float | None:
        """Start the probes that are due; when the next one is (None: no probe configured)."""
        next_due = None
        for model in self.models():
            if model.is_local or model.health.probe == "none":
                continue
            due = self._due.get(model.name, 0.0)
            if now >= due and model.name not in self._running:
                due = self._due[model.name] = now + model.health.interval_s
                task = asyncio.ensure_future(self._probe(model))
                self._running[model.name] = task
                task.add_done_callback(lambda _t, name=model.name: self._probed(name))
            elif now >= due:   # the last one is still out: its end wakes the loop
                continue
            next_due = due if next_due is None else min(next_due, due)
        return next_due

    def _probed(self, name: str) -> None:
        self._running.pop(name, None)
        self._changed.set()

    async def _probe(self, model) -> None:
        url = probe_url(model)
        if url is None:
            return
        if self._client is None:
            self._client = httpx.AsyncClient()
        timeout = min(MAX_TIMEOUT_S, model.health.interval_s)
        try:
            response = await self._client.get(url, headers=probe_headers(model), timeout=timeout)
        except httpx.TimeoutException:
            self.health.failed(model.name, f"probe {url}: no answer within {timeout:g} s")
            return
        except httpx.HTTPError as exc:
            self.health.failed(model.name, f"probe {url}: {exc!r}")
            return
        if 200 <= response.status_code < 300:
            self.health.succeeded(model.name)
        else:
            self.health.failed(model.name, f"probe {url} answered {response.status_code}")
