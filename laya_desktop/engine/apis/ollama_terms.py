"""What an Ollama request asks of the local model that serves it, checked once routing has chosen
that model (dispatch.check_local runs the call's `model_checks`):

- `options.num_ctx`: a context of at least that many tokens. A loaded model's context does not
  change per request, so a model whose `n_ctx` holds it serves as it is, and one whose `n_ctx` is
  smaller refuses with the code of a prompt too long, which sends the request to the rule's next
  fallback.
- `keep_alive`: to stay loaded that long after the answer. A model that stays at least that long
  (its `idle_ttl_s`, or pinned, or never idle-unloaded) honours it; Ollama's `keep_alive` is also
  how clients ask for *less*, but the memory guard, not the client, frees memory here. Longer than
  the model's TTL, or `0` on a request that generates (unload after answering), is refused by name:
  models.yaml says how long a model stays. A remote model has nothing to keep loaded.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from laya_desktop.engine.errors import bad_request

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def keep_alive_seconds(value: Any) -> float | None:
    """Ollama's keep_alive (seconds as a number, or a Go duration such as "5m", "1h30m", "-1")
    in seconds, negative meaning for ever; None when absent. 400 when it is neither."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value:
        if _NUMBER.fullmatch(value):
            return float(value)
        sign, text = (-1.0, value[1:]) if value.startswith("-") else (1.0, value)
        parts = _PART.findall(text)
        if parts and "".join(n + u for n, u in parts) == text:
            return sign * sum(float(n) * _UNITS[u] for n, u in parts)
    raise bad_request("'keep_alive' must be a number of seconds or a duration such as \"5m\"",
                      "invalid_keep_alive")


def _stays_for(model) -> float:
    """How long the model stays loaded once idle, in seconds (inf: until the guard needs it)."""
    if model.keep_in_memory or not model.idle_ttl_s:
        return float("inf")
    return float(model.idle_ttl_s)


def keep_alive_check(seconds: float) -> Callable:
    def check(model) -> None:
        if seconds == 0:
            raise bad_request("'keep_alive' 0 on a request that generates is not supported: "
                              "unload a model with no prompt (or no messages) and keep_alive 0, "
                              "or let its idle_ttl_s in models.yaml do it", "unsupported_parameter")
        stays = _stays_for(model)
        wanted = float("inf") if seconds < 0 else seconds
        if wanted > stays:
            raise bad_request(f"'keep_alive' asks for {'ever' if seconds < 0 else f'{seconds:g} s'}"
                              f", longer than model '{model.name}' stays loaded when idle "
                              f"(idle_ttl_s {model.idle_ttl_s} in models.yaml; keep_in_memory: "
                              "true pins it)", "unsupported_parameter")
    return check


def num_ctx_check(tokens: int) -> Callable:
    def check(model) -> None:
        if tokens > model.n_ctx:
            raise bad_request(f"'options.num_ctx' {tokens} is more than model '{model.name}' holds "
                              f"(n_ctx {model.n_ctx} in models.yaml; a loaded model's context does "
                              "not change per request)", "context_length_exceeded")
    return check


def model_checks(num_ctx: int | None, keep_alive: Any) -> list[Callable]:
    checks = []
    if num_ctx is not None:
        checks.append(num_ctx_check(num_ctx))
    seconds = keep_alive_seconds(keep_alive)
    if seconds is not None:
        checks.append(keep_alive_check(seconds))
    return checks
