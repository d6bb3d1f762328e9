"""llama-server's own completion API (`POST /completion`, and `/completions` without /v1), for
llama.cpp's clients: its body in (`n_predict` for max_tokens, the rest as /v1/completions takes
it), its objects out: `content`, `stop`, `tokens_predicted`, `tokens_evaluated`, `stop_type`,
`timings`, `generation_settings`... A stream is `data: {...}` objects, the last one `stop: true`
with the whole answer's counts; no `[DONE]` (llama-server sends none here).

`/completions` answers OpenAI's text_completion object with llama-server's fields beside it, and
streams OpenAI's chunks: an OpenAI SDK whose base_url lacks /v1 posts there, and so do
llama-server's clients; each finds its own fields. `/completion` is llama-server's format alone.

What Laya does not know, it does not make up: `tokens` is empty unless `return_tokens` could be
honoured (it is refused by name), `id_slot` is -1 (the runner picks the slot), and `stop_type` is
"limit" for max_tokens and "eos" for every other stop (the runner does not say whether a stop
string or the end-of-generation token ended the answer; `stopping_word` stays "").
"""
from __future__ import annotations

from typing import Any, AsyncIterator

from starlette.datastructures import Headers
from starlette.responses import Response

from laya_desktop.engine.apis.base import Meta
from laya_desktop.engine.apis.chat import COMPLETIONS, KEEPALIVE, failure_payload
from laya_desktop.engine.calls import Call
from laya_desktop.engine.errors import ApiError, bad_request
from laya_desktop.engine.outputs import (Collected, Failed, Finished, KeepAlive, Output, TextDelta,
                                         Usage)
from laya_desktop.engine.request_body import completion_call
from laya_desktop.engine.sse import sse

# generation_settings: the request's values as the runner got them, under llama-server's names
SETTINGS = {"max_tokens": "n_predict", "temperature": "temperature", "top_k": "top_k",
            "top_p": "top_p", "min_p": "min_p", "seed": "seed", "stop": "stop",
            "repeat_penalty": "repeat_penalty", "repeat_last_n": "repeat_last_n",
            "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty"}


MAX_N_PROBS = 20   # as top_logprobs (request_body.MAX_TOP_LOGPROBS)
MAX_RESPONSE_FIELDS = 64
NATIVE_FIELDS = ("n_predict", "n_probs", "response_fields")


def native_call(body: Any, path: str) -> Call:
    """llama-server's body -> the shared Call: `n_predict` is max_tokens, `n_probs` asks for
    each token's top log-probabilities (as top_logprobs), `response_fields` picks the answer's
    fields, and a prompt may be `{"prompt_string": ...}`."""
    if not isinstance(body, dict):
        return completion_call(body, path=path)
    options = {}
    n_probs = body.get("n_probs")
    if n_probs is not None:
        if isinstance(n_probs, bool) or not isinstance(n_probs, int) or not 0 <= n_probs <= MAX_N_PROBS:
            raise bad_request(f"'n_probs' must be an integer from 0 to {MAX_N_PROBS}", "invalid_n_probs")
        if body.get("logprobs") is not None:
            raise bad_request("'n_probs' and 'logprobs' cannot be given together", "invalid_n_probs")
        options["n_probs"] = n_probs
    fields = body.get("response_fields")
    if fields is not None:
        if (not isinstance(fields, list) or len(fields) > MAX_RESPONSE_FIELDS
                or not all(isinstance(f, str) and f for f in fields)):
            raise bad_request(f"'response_fields' must be an array of at most {MAX_RESPONSE_FIELDS} "
                              "field paths ('a/b')", "invalid_response_fields")
        options["response_fields"] = fields
    converted = {k: v for k, v in body.items() if k not in NATIVE_FIELDS}
    converted = native_body({**converted, "n_predict": body["n_predict"]}
                            if "n_predict" in body else converted)
    prompt = converted.get("prompt")
    if isinstance(prompt, dict):
        converted["prompt"] = prompt_object(prompt)
    call = completion_call(converted, path=path)
    if options.get("n_probs"):
        call.command["params"].update(logprobs=True, top_logprobs=options["n_probs"])
        call.field_names["logprobs"] = "n_probs"   # what MLX's refusal names
    call.options.update(options)
    return call


def prompt_object(prompt: dict) -> str:
    """llama-server's prompt object: its text, `prompt_string`; media need a vision model."""
    if "multimodal_data" in prompt:
        raise bad_request("'prompt.multimodal_data' is not supported: the local models here "
                          "take text only", "unsupported_content")
    extra = sorted(prompt.keys() - {"prompt_string"})
    if extra:
        raise bad_request(f"unknown field 'prompt.{extra[0]}'", "unknown_parameter")
    text = prompt.get("prompt_string")
    if not isinstance(text, str):
        raise bad_request("'prompt.prompt_string' must be a string", "invalid_prompt")
    return text


def native_body(body: Any) -> Any:
    """`n_predict` (llama-server's max_tokens; -1 or absent: no limit but the context) -> the
    /v1/completions body the shared parser checks."""
    if not isinstance(body, dict) or "n_predict" not in body:
        return body
    body = dict(body)
    n_predict = body.pop("n_predict")
    if isinstance(n_predict, bool) or not isinstance(n_predict, int) or n_predict < -1 or n_predict == 0:
        raise bad_request("'n_predict' must be a positive integer, or -1 for no limit",
                          "invalid_n_predict")
    if "max_tokens" in body:
        raise bad_request("'n_predict' and 'max_tokens' cannot be given together", "invalid_n_predict")
    if n_predict > 0:
        body["max_tokens"] = n_predict
    return body


def prompt_text(command: dict) -> str:
    """The prompt as sent: a completion's text, or a chat's messages one a line ("role: text");
    the runner applies the chat template, so its exact text is not known here."""
    if "prompt" in command:
        return command["prompt"]
    return "\n".join(f"{m['role']}: {m.get('content') or ''}" for m in command.get("messages", []))


def stop_type(finish_reason: str) -> str:
    return "limit" if finish_reason == "length" else "eos"


def probabilities(entries: list[dict] | None) -> list[dict]:
    """llama-server's completion_probabilities: each token's id, text, log-probability and
    bytes, with the most likely tokens under the model's raw logits."""
    def one(e: dict) -> dict:
        return {"id": e.get("id", -1), "token": e["token"], "logprob": e["logprob"],
                "bytes": e.get("bytes") or []}
    return [{**one(e), "top_logprobs": [one(t) for t in e.get("top_logprobs", [])]}
            for e in entries or []]


def picked(answer: dict, fields: list[str]) -> dict:
    """llama-server's `response_fields`: each path ('generation_settings/n_predict') that
    exists, under its path."""
    out = {}
    for path in fields:
        value: Any = answer
        for key in path.split("/"):
            if not isinstance(value, dict) or key not in value:
                break
            value = value[key]
        else:
            out[path] = value
    return out


def final_fields(call: Call, meta: Meta, content: str, finish_reason: str, usage: Usage) -> dict:
    params = call.command.get("params", {})
    settings = {name: params[key] for key, name in SETTINGS.items() if key in params}
    settings.setdefault("n_predict", -1)
    return {"index": 0, "content": content, "tokens": [], "id_slot": -1, "stop": True,
            "model": meta.model, "tokens_predicted": usage.completion_tokens,
            "tokens_evaluated": usage.prompt_tokens, "generation_settings": settings,
            "prompt": prompt_text(call.command), "has_new_line": "\n" in content,
            "truncated": False, "stop_type": stop_type(finish_reason),
            "stopped_eos": finish_reason != "length", "stopped_limit": finish_reason == "length",
            "stopped_word": False, "stopping_word": "", "tokens_cached": usage.cached_tokens,
            "timings": meta.timings(usage)}


class NativeCompletionApi:
    """/completion: llama-server's format alone."""
    name = "completions"

    def parse(self, body: Any, headers: Headers, engine: Any = None) -> Call:
        return native_call(body, "/completion")

    def error_response(self, error: ApiError, headers: dict[str, str] | None = None) -> Response:
        return error.response(headers)   # llama-server's errors have OpenAI's shape

    def stream_failure(self, failed: Failed) -> bytes:
        return sse(failure_payload(failed))

    async def stream(self, call: Call, outputs: AsyncIterator[Output], meta: Meta) -> AsyncIterator[bytes]:
        predicted, with_probs = 0, bool(call.options.get("n_probs"))
        async for out in outputs:
            if isinstance(out, TextDelta):
                if out.text or (with_probs and out.logprobs):
                    predicted += len(out.logprobs) if out.logprobs else 1
                    chunk = {"index": 0, "content": out.text, "tokens": [], "stop": False,
                             "id_slot": -1, "tokens_predicted": predicted,
                             "tokens_evaluated": meta.prompt_tokens or 0}
                    if with_probs:
                        chunk["completion_probabilities"] = probabilities(out.logprobs)
                    yield sse(chunk)
            elif isinstance(out, KeepAlive):
                yield KEEPALIVE
            elif isinstance(out, Finished):
                yield sse(final_fields(call, meta, "", out.finish_reason, out.usage))
            elif isinstance(out, Failed):
                yield sse(failure_payload(out))

    def collect(self, call: Call, result: Collected, meta: Meta) -> dict:
        answer = final_fields(call, meta, result.text, result.finish_reason, result.usage)
        if call.options.get("n_probs"):
            answer["completion_probabilities"] = probabilities(result.logprobs)
        fields = call.options.get("response_fields")
        return picked(answer, fields) if fields else answer


class NativeCompletion(NativeCompletionApi):
    def parse(self, body: Any, headers: Headers, engine: Any = None) -> Call:
        call = super().parse(body, headers, engine)
        if (call.body.get("n") or 1) > 1:
            raise bad_request("'n' is not taken on /completion (llama-server's format has one "
                              "answer); use /v1/completions", "unsupported_parameter")
        return call


class BothCompletionsApi(NativeCompletionApi):
    """/completions: OpenAI's object with llama-server's fields beside it; OpenAI's stream."""

    def parse(self, body: Any, headers: Headers, engine: Any = None) -> Call:
        if isinstance(body, dict) and "response_fields" in body:   # it would drop OpenAI's fields
            raise bad_request("'response_fields' is taken on /completion, llama-server's own "
                              "format alone", "unsupported_parameter")
        return native_call(body, "/completions")

    def stream_failure(self, failed: Failed) -> bytes:
        return COMPLETIONS.stream_failure(failed)

    def stream(self, call: Call, outputs: AsyncIterator[Output], meta: Meta) -> AsyncIterator[bytes]:
        return COMPLETIONS.stream(call, outputs, meta)

    def collect(self, call: Call, result: Collected, meta: Meta) -> dict:
        native = final_fields(call, meta, result.text, result.finish_reason, result.usage)
        native.pop("index")   # OpenAI's index is each choice's
        if call.options.get("n_probs"):
            native["completion_probabilities"] = probabilities(result.logprobs)
        return {**native, **COMPLETIONS.collect(call, result, meta)}


NATIVE_COMPLETION = NativeCompletion()
BOTH_COMPLETIONS = BothCompletionsApi()
