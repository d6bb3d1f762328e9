"""GET /admin/telemetry?since=SEQ and GET /metrics (Prometheus text)."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from laya_desktop.engine.admin_api import _since


async def telemetry(request: Request) -> Response:
    seq, samples = request.app.state.engine.telemetry.samples.snapshot(_since(request))
    return JSONResponse({"seq": seq, "samples": samples})


async def metrics(request: Request) -> Response:
    from laya_desktop.telemetry.prometheus import CONTENT_TYPE  # prometheus_client, on first use
    return Response(request.app.state.engine.metrics.render(), media_type=CONTENT_TYPE)


def routes() -> list[Route]:
    return [Route("/admin/telemetry", telemetry, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"])]
