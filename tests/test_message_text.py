"""One reader of message text (config.message_text) for the engine's runner command, the routing
rules and the runner's chat templates: the three see the same text of the same content."""
from __future__ import annotations

import pytest

from laya_desktop.engine.request_body import runner_messages
from laya_desktop.routing.request import text_parts
from laya_desktop.runners.protocol import BadRequest, message_text

CONTENT = [{"type": "text", "text": "Hello "}, {"type": "image_url", "image_url": {"url": "x"}},
           {"type": "input_text", "text": "from "}, {"type": "output_text", "text": "Paris"}]


def test_engine_routing_and_runner_read_the_same_text():
    body = {"messages": [{"role": "user", "content": CONTENT}]}
    (sent,) = runner_messages(body["messages"])
    user_parts, chars = text_parts(body)
    assert sent["content"] == "".join(user_parts) == message_text(CONTENT) == "Hello from Paris"
    assert chars == len("Hello from Paris")


def test_odd_shapes_have_no_text_and_the_runner_refuses_a_non_text_content():
    assert message_text(None) == "" and message_text([{"type": "text", "text": 5}, "bare"]) == ""
    assert text_parts({"messages": [{"role": "user", "content": 5}]}) == ([], 0)
    with pytest.raises(BadRequest):
        message_text(5)
