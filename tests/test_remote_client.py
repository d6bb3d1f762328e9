"""RemoteClient, the engine's HTTP client for remote models, against a real loopback upstream:
the JSON it sends, keep-alive, and the proxies from the environment (HTTP_PROXY, NO_PROXY)."""
from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest

from laya_desktop.engine.remote import RemoteClient
from loopback_upstream import ChatUpstream, _Handler, chat_upstreams


def _post(client: RemoteClient, url: str, payload: dict) -> tuple[int, dict]:
    async def go():
        response = await client.post(url, payload, {"Content-Type": "application/json"})
        try:
            return response.status_code, json.loads(await response.aread())
        finally:
            await response.aclose()
    return asyncio.run(go())


def _clear_proxies(monkeypatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
                 "http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_posts_json_and_reads_the_answer(monkeypatch):
    _clear_proxies(monkeypatch)
    with chat_upstreams(up=0.0) as ups:
        status, body = _post(RemoteClient(), ups["up"].base_url + "/chat/completions",
                             {"model": "m", "messages": [{"role": "user", "content": "héllo"}]})
        assert status == 200
        assert body["choices"][0]["message"]["content"] == "from up"
        assert ups["up"].hits == 1


class _Recording(_Handler):
    """Keeps what reached it: the request line's target, the headers and the client's address."""
    protocol_version = "HTTP/1.1"
    seen: list = []

    def do_POST(self):
        _Recording.seen.append((self.path, dict(self.headers), self.client_address))
        super().do_POST()


def _recording_upstream():
    server = ChatUpstream("proxy")
    server.RequestHandlerClass = _Recording
    _Recording.seen = []
    return server


def test_http_proxy_from_the_environment_is_used_unless_no_proxy(monkeypatch):
    _clear_proxies(monkeypatch)
    proxy = _recording_upstream()
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_port}")
        target = "http://remote.invalid:8000/v1/chat/completions"
        status, body = _post(RemoteClient(), target, {"model": "m", "messages": []})
        assert status == 200 and body["model"] == "proxy"
        # a forward proxy gets the absolute URL, and no Accept-Encoding: relays pass bytes on
        path, headers, _ = _Recording.seen[-1]
        assert path == target
        assert "Accept-Encoding" not in headers

        monkeypatch.setenv("NO_PROXY", "remote.invalid")
        with pytest.raises(httpx.ConnectError):
            _post(RemoteClient(), target, {"model": "m", "messages": []})
        assert len(_Recording.seen) == 1
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_connections_are_kept_alive(monkeypatch):
    _clear_proxies(monkeypatch)
    upstream = _recording_upstream()
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    client = RemoteClient()
    try:
        async def twice():
            for _ in range(2):
                response = await client.post(upstream.base_url + "/chat/completions",
                                             {"model": "m"}, {})
                await response.aread()
                await response.aclose()
            await client.aclose()
        asyncio.run(twice())
        (_, _, first), (_, _, second) = _Recording.seen
        assert first == second   # one TCP connection: the same client port
    finally:
        upstream.shutdown()
        upstream.server_close()


@pytest.mark.parametrize("tail, expected", [
    # a whole chat answer whose text mentions the key: only the real object counts
    (json.dumps({"choices": [{"message": {"content": 'a "usage": {"prompt_tokens": 99}'}}],
                 "usage": {"prompt_tokens": 3, "completion_tokens": 4}}).encode(), (3, 4)),
    # chat stream: usage after the finish, a null one before it
    (b'data: {"choices":[{"finish_reason":"stop"}],"usage":null}\n\n'
     b'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}\n\ndata: [DONE]\n\n', (1, 2)),
    # Responses' response.completed, Anthropic's message_delta (output tokens only)
    (b'data: {"type":"response.completed","response":{"usage":{"input_tokens":5,"output_tokens":6}}}\n\n', (5, 6)),
    (b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":9}}\n\n'
     b'event: message_stop\ndata: {"type":"message_stop"}\n\n', (None, 9)),
    (b'{"usage": null}', None),
    (b'data: {"usage": {"prompt_tok', None),   # cut off
])
def test_usage_is_read_from_the_answers_end(tail, expected):
    from laya_desktop.engine.remote import find_usage
    usage = find_usage(tail)
    assert (None if usage is None else (usage["prompt_tokens"], usage["completion_tokens"])) == expected
