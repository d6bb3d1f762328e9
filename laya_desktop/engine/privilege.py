"""Which config changes only the user's own processes may make, and whether a request is one.

A change to `server` (address, keys, hosts, origins) or to where a remote model sends prompts and
keys (a new remote, another base_url, api_key_env or headers) needs the admin key or the app token
(config/app_token.py). Routes and local models need neither: a client that may call the engine
may rearrange them. Edits of models.yaml itself are the user's by definition.
"""
from __future__ import annotations

import dataclasses
import hmac

from starlette.requests import Request

from laya_desktop.config.schema import Config
from laya_desktop.engine.web_guard import STATE_KEY

_REMOTE_ENDPOINT = ("backend", "base_url", "api_key_env", "headers")


def given_key(headers: dict[bytes, bytes]) -> bytes:
    auth = headers.get(b"authorization", b"")
    if auth[:7].lower() == b"bearer ":
        return auth[7:].strip()
    # Anthropic's clients (Claude Code, the anthropic SDK) send the key as x-api-key.
    return headers.get(b"x-api-key", b"").strip()


def key_matches(given: bytes, key: str | None) -> bool:
    # compare_digest's time does not depend on where the bytes differ; it does leak the length.
    return key is not None and hmac.compare_digest(given, key.encode())


def showed_app_token(scope) -> bool:
    return bool(scope.get("state", {}).get(STATE_KEY))


def is_privileged(request: Request, config: Config) -> bool:
    if showed_app_token(request.scope):
        return True
    admin_key = config.server.admin_api_key
    return bool(admin_key) and key_matches(given_key(dict(request.scope["headers"])), admin_key)


def _endpoint(model) -> tuple:
    return tuple(getattr(model, name, None) for name in _REMOTE_ENDPOINT)


def privileged_changes(old: Config, new: Config) -> list[str]:
    """What in `new` needs privilege over `old`, by path; empty when nothing does. Pure."""
    changes = [f"server.{f.name}" for f in dataclasses.fields(old.server)
               if getattr(old.server, f.name) != getattr(new.server, f.name)]
    before = {m.name: m for m in old.models}
    for i, model in enumerate(new.models):
        if model.is_local:
            continue
        prev = before.get(model.name)
        if prev is None or _endpoint(prev) != _endpoint(model):
            what = "a new remote" if prev is None or prev.is_local else "a remote's endpoint"
            key = f", key from ${model.api_key_env}" if model.api_key_env else ""
            changes.append(f"models[{i}] ({what}: {model.base_url}{key})")
    return changes
