"""GET /admin/telemetry?since=SEQ and GET /metrics (Prometheus text)."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from laya_desktop.engine.admin_api import _since
from laya_desktop.telemetry.prometheus import CONTENT_TYPE, render_metrics


async def telemetry(request: Request) -> Response:
    seq, samples = request.app.state.engine.telemetry.samples.snapshot(_since(request))
    return JSONResponse({"seq": seq, "samples": samples})


async def metrics(request: Request) -> Response:
    engine = request.app.state.engine
    latest = engine.telemetry.samples.latest()
    models = dict((latest or {}).get("models", {}))
    for served in engine.models.models.values():
        models.setdefault(served.name, {"state": served.state, "active": served.active,
                                        "queued": served.queue.queued})
    text = render_metrics(latest, models, {"requests": engine.request_counts,
                                           "events": engine.events.totals})
    return PlainTextResponse(text, media_type=CONTENT_TYPE)


def routes() -> list[Route]:
    return [Route("/admin/telemetry", telemetry, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"])]
