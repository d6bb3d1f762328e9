"""What every answer of the engine must look like to a client of the API it called."""
from __future__ import annotations

import httpx


def check_shape(path: str, r: httpx.Response) -> None:
    """A 2xx (or 499, a client that left), or a 4xx whose body is the error shape of the API
    `path` belongs to: Anthropic's under /v1/messages, OpenAI's elsewhere. Never a 5xx."""
    assert r.status_code < 500, (path, r.status_code, r.text[:500])
    if r.status_code < 400 or r.status_code == 499:
        return
    body = r.json()
    if path.startswith("/v1/messages"):
        assert body["type"] == "error", body
        assert isinstance(body["error"]["type"], str) and isinstance(body["error"]["message"], str)
    else:
        assert isinstance(body["error"]["message"], str) and isinstance(body["error"]["type"], str), body
