"""Every call to the engine's admin API, described and not sent: method, path (names quoted, query
encoded), JSON body, timeout, and how the answer becomes a typed object. Senders: the GUI over
QtNetwork (gui/engine_client.py), the command line (control/admin_client.py) and the load tester
(loadtest/sweep.py), over httpx. Nothing else builds an /admin/ path."""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote, urlencode

from laya_desktop.admin_api.answers import (
    ConfigApplied, ConfigRevision, Page, events_of, page_of,
)
from laya_desktop.admin_api.errors import AdminError, error_of

ADMIN_TIMEOUT_S = 10.0
LOAD_TIMEOUT_S = 300.0   # a large GGUF may take minutes to map and warm up
CHAT_PATH = "/v1/chat/completions"

T = TypeVar("T")
Parse = Callable[[Any, Mapping[str, str]], T]   # (JSON body, headers in lower case) -> answer


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Parse
    body: Any = None
    timeout_s: float = ADMIN_TIMEOUT_S
    headers: Mapping[str, str] = field(default_factory=dict)

    def answer(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> T:
        """The typed answer, or the AdminError the engine answered instead."""
        error = error_of(status, body)
        if error is not None:
            raise error
        try:
            data = json.loads(body) if body else None
        except ValueError:
            raise AdminError(f"{self.method} {self.path}: the answer is not JSON", status,
                             "bad_answer") from None
        return self.parse(data, {k.lower(): v for k, v in (headers or {}).items()})


def _dict(data: Any, _headers: Mapping[str, str]) -> dict:
    return data if isinstance(data, dict) else {}


def _path(*parts: str, **query: Any) -> str:
    path = "/" + "/".join(quote(str(p), safe="") for p in parts)
    return path + (f"?{urlencode(query)}" if query else "")


def _name(name: str) -> str:
    if not name:
        raise ValueError("a model name is needed")
    return name


# --- config ------------------------------------------------------------------------------------
def config() -> Call[ConfigRevision]:
    return Call("GET", _path("admin", "config"),
                lambda data, headers: ConfigRevision(_dict(data, headers), headers.get("etag")))


def put_config(config: dict, if_match: str | None = None) -> Call[ConfigApplied]:
    """The whole config; with `if_match`, a config changed since that revision is refused (409
    config_conflict). Applying may load models: the long timeout."""
    def parse(data: Any, headers: Mapping[str, str]) -> ConfigApplied:
        data = _dict(data, headers)
        applied = data.get("config")
        return ConfigApplied(str(data.get("status") or ""),
                             applied if isinstance(applied, dict) else None, headers.get("etag"))
    return Call("PUT", _path("admin", "config"), parse, config, LOAD_TIMEOUT_S,
                {"If-Match": if_match} if if_match else {})


# --- models ------------------------------------------------------------------------------------
def models() -> Call[list[dict]]:
    return Call("GET", _path("admin", "models"), lambda data, headers: [
        m for m in _dict(data, headers).get("models") or [] if isinstance(m, dict)])


def load(name: str) -> Call[dict]:
    return Call("POST", _path("admin", "models", _name(name), "load"), _dict,
                timeout_s=LOAD_TIMEOUT_S)


def unload(name: str) -> Call[dict]:
    return Call("POST", _path("admin", "models", _name(name), "unload"), _dict,
                timeout_s=LOAD_TIMEOUT_S)


def clear_prompt_cache(name: str) -> Call[dict]:
    """Drop a local model's saved prompt states, in its runner's RAM and on disk."""
    return Call("DELETE", _path("admin", "models", _name(name), "prompt-cache"), _dict)


def one_token(name: str) -> Call[dict]:
    """One token through a model: what a warm-up sends after the load."""
    body = {"model": name, "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]}
    return Call("POST", CHAT_PATH, _dict, body, LOAD_TIMEOUT_S)


# --- logs --------------------------------------------------------------------------------------
def telemetry(since: int = 0) -> Call[Page]:
    return Call("GET", _path("admin", "telemetry", since=since),
                lambda data, _h: page_of(data, "samples"))


def events(since: int = 0) -> Call[Page]:
    return Call("GET", _path("admin", "events", since=since), lambda data, _h: events_of(data))


def requests(since: int = 0) -> Call[Page]:
    return Call("GET", _path("admin", "requests", since=since),
                lambda data, _h: page_of(data, "requests"))


# --- routing -----------------------------------------------------------------------------------
def explain(prompt: str, tags: list[str], model: str | None = None) -> Call[dict]:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}], "tags": list(tags)}
    if model:
        body["model"] = model
    return Call("POST", _path("admin", "route", "explain"), _dict, body)


def route_replay(routes: list[dict]) -> Call[dict]:
    """What these rules would change for the recently logged requests (nothing is applied)."""
    return Call("POST", _path("admin", "route", "replay"), _dict, {"routes": routes},
                LOAD_TIMEOUT_S)


def semantic_probe(semantic: dict, prompts: list[str], recent: int = 200,
                   precision: float = 0.95, others: list[dict] | None = None,
                   false_positive: float = 0.05) -> Call[dict]:
    """Scores for a semantic condition being edited; `others`: the other rules' {name, semantic},
    which a learned head scores it against."""
    body = {"semantic": semantic, "prompts": prompts, "recent": recent, "precision": precision,
            "others": others or [], "false_positive": false_positive}
    return Call("POST", _path("admin", "route", "semantic"), _dict, body, LOAD_TIMEOUT_S)


def route_stats(window_s: float) -> Call[dict]:
    return Call("GET", _path("admin", "stats", window_s=window_s), _dict)
