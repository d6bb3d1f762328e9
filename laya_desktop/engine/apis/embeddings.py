"""OpenAI /v1/embeddings, served by GGUF models marked `embedding: true` (or an openai remote)."""
from __future__ import annotations

import base64
import struct
from typing import Any, AsyncIterator

from starlette.datastructures import Headers
from starlette.responses import Response

from laya_desktop.engine.apis.base import Meta
from laya_desktop.engine.calls import Call
from laya_desktop.engine.errors import ApiError, bad_request
from laya_desktop.engine.outputs import Collected, Output

MAX_INPUTS = 2048


SHAPES = "a string, an array of strings, an array of token ids, or an array of such arrays"


def _is_token(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _inputs(raw: Any) -> list[str | list[int]]:
    """OpenAI's four input shapes -> a list of inputs, each a text or a list of token ids."""
    if isinstance(raw, str) or (isinstance(raw, list) and raw and all(map(_is_token, raw))):
        raw = [raw]
    if not isinstance(raw, list) or not raw or len(raw) > MAX_INPUTS:
        raise bad_request(f"'input' must be {SHAPES} (1 to {MAX_INPUTS} inputs)", "invalid_input")
    for i, item in enumerate(raw):
        if isinstance(item, str):
            if not item:
                raise bad_request(f"'input[{i}]' is an empty string", "invalid_input")
        elif not (isinstance(item, list) and item and all(map(_is_token, item))):
            raise bad_request(f"'input[{i}]' must be a non-empty string or a non-empty array of "
                              f"token ids (integers from 0); 'input' is {SHAPES}", "invalid_input")
    return raw


class EmbeddingsApi:
    name = "embeddings"

    def parse(self, body: Any, headers: Headers, engine: Any = None) -> Call:
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        model = body.get("model")
        if model is not None and not isinstance(model, str):
            raise bad_request("'model' must be a string", "invalid_model")
        inputs = _inputs(body.get("input"))
        fmt = body.get("encoding_format", "float")
        if fmt not in ("float", "base64"):
            raise bad_request("'encoding_format' must be 'float' or 'base64'", "invalid_encoding_format")
        if body.get("dimensions") is not None:
            raise bad_request("'dimensions' is not supported: the model's own size is returned",
                              "unsupported_parameter")
        # What the rules see: the inputs as a prompt (their text is the user text; token ids
        # have none).
        routed = {"model": model, "prompt": [t for t in inputs if isinstance(t, str)],
                  "tags": body.get("tags")}
        return Call(api="embeddings", path="/v1/embeddings", body=body, chat=routed,
                    command={"kind": "embedding", "inputs": inputs, "params": {}},
                    options={"encoding_format": fmt})

    def error_response(self, error: ApiError, headers: dict[str, str] | None = None) -> Response:
        return error.response(headers)

    async def stream(self, call: Call, outputs: AsyncIterator[Output], meta: Meta):
        raise AssertionError("embeddings are never streamed")
        yield b""

    def collect(self, call: Call, result: Collected, meta: Meta) -> dict:
        base64_out = call.options.get("encoding_format") == "base64"
        data = []
        for i, vector in enumerate(result.embeddings or []):
            value: Any = vector
            if base64_out:
                value = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": i, "embedding": value})
        usage = result.usage
        return {"object": "list", "data": data, "model": meta.model,
                "usage": {"prompt_tokens": usage.prompt_tokens, "total_tokens": usage.prompt_tokens}}


EMBEDDINGS = EmbeddingsApi()
