"""POST /admin/route/semantic: scores for a semantic condition being edited (not applied).

Body: {"semantic": {examples, negatives, threshold}, "prompts": [text, ...], "recent": N,
"precision": P, "others": [{"name": rule, "semantic": {...}}, ...], "false_positive": F (the
target every suggestion holds, 0.05 unless given)}. Answers each prompt's score
and nearest example, the score lists the Routes panel draws as histograms (examples
leave-one-out, negatives, the last N logged requests), a threshold suggestion per mode and, with
two negatives or more, a `margin` suggestion per mode, and `target_suggestion` (the threshold
within F, and what is too few to promise it). With `scoring: learned`, `others` (the
config's other semantic rules) join the head that scores the prompts, as in the router.
The model runs off the event loop, in the engine's one encoder.
"""
from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from laya_desktop.config.validate import validate_semantic
from laya_desktop.engine import errors
from laya_desktop.engine.errors import ApiError
from laya_desktop.engine.serving import read_json
from laya_desktop.routing.semantic import shared_embeddings

MAX_PROMPTS = 20
MAX_RECENT = 500


def _strings(body: dict, key: str) -> list[str]:
    value = body.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise errors.bad_request(f"'{key}' must be a list of strings", "invalid_semantic_probe")
    if len(value) > MAX_PROMPTS:
        raise errors.bad_request(f"'{key}': at most {MAX_PROMPTS} prompts, got {len(value)}",
                                 "invalid_semantic_probe")
    return value


async def semantic_probe(request: Request) -> Response:
    engine = request.app.state.engine
    body = await read_json(request)
    if not isinstance(body, dict):
        raise errors.bad_request("the body must be a JSON object with 'semantic'", "invalid_semantic_probe")
    match, problems = validate_semantic(body.get("semantic"))
    others = _others(body.get("others", []), problems)
    if problems:
        detail = [{"path": e.path, "message": e.message} for e in problems]
        raise ApiError(400, f"semantic condition refused: {len(problems)} error(s)",
                       "invalid_config", "invalid_config", extra={"errors": detail})
    prompts = _strings(body, "prompts")
    recent = body.get("recent", 200)
    precision = body.get("precision", 0.95)
    if isinstance(recent, bool) or not isinstance(recent, int) or not 0 <= recent <= MAX_RECENT:
        raise errors.bad_request(f"'recent' must be an integer from 0 to {MAX_RECENT}", "invalid_semantic_probe")
    if isinstance(precision, bool) or not isinstance(precision, (int, float)) or not 0 < precision <= 1:
        raise errors.bad_request("'precision' must be a number in (0, 1]", "invalid_semantic_probe")
    false_positive = body.get("false_positive", 0.05)
    if isinstance(false_positive, bool) or not isinstance(false_positive, (int, float)) or not 0 < false_positive < 1:
        raise errors.bad_request("'false_positive' must be a number in (0, 1)", "invalid_semantic_probe")
    texts = [e["user_text"] for e in engine.route_inputs.recent(recent)] if recent else []
    try:
        answer = await asyncio.to_thread(_probe, match, prompts, texts, shared_embeddings(), float(precision),
                                         others, float(false_positive))
    except RuntimeError as exc:  # the model package is missing: say so, do not crash
        raise ApiError(503, str(exc), "server_error", "semantic_model_missing")
    return JSONResponse(answer)


def _others(raw, problems: list) -> dict:
    """The other rules' conditions, by name; their errors join `problems`."""
    if not isinstance(raw, list) or not all(isinstance(o, dict) and isinstance(o.get("name"), str)
                                            for o in raw):
        raise errors.bad_request("'others' must be a list of {name, semantic}", "invalid_semantic_probe")
    out = {}
    for i, other in enumerate(raw):
        match, found = validate_semantic(other.get("semantic"), f"others[{i}].semantic")
        problems.extend(found)
        if match is not None:
            out[other["name"]] = match
    return out


def _probe(*args):
    from laya_desktop.routing.semantic_probe import probe  # numpy: imported in the worker, on use
    return probe(*args)


def routes() -> list[Route]:
    return [Route("/admin/route/semantic", semantic_probe, methods=["POST"])]
