"""The HTTP side of ``ragmeter serve``: the OTLP/HTTP receiver (``POST /v1/traces``), Prometheus's ``/metrics``
(:mod:`ragmeter.serve.prometheus`) and the page at ``/`` (:mod:`ragmeter.serve.page`) on a Starlette app; the thread
that scores what it stored, the one that checks the windows for drops (:mod:`ragmeter.serve.drops`) and the one that
forwards the scores downstream (:mod:`ragmeter.serve.forward`).

A request is answered 200 only once its spans are committed to the store; spans that cannot be read are counted in
the reply's ``partial_success`` with the first reason, never stored. When scoring falls behind (more than
``max_backlog`` traces received and not yet scored), the receiver answers 503 with ``Retry-After`` before reading
the body — the OTLP exporters retry then — so memory stays bounded however fast traces come; a body larger than
the limit is refused (413) as it streams in. A store that cannot take a write now (a full disk, its database server
gone) also answers 503 with ``Retry-After``: nothing of the request is stored, and the exporter sends it again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from ragmeter.core.errors import ConfigError
from ragmeter.report.html import render_serve_html
from ragmeter.serve.drops import DropWatch
from ragmeter.serve.forward import Forwarder, ForwardError
from ragmeter.serve.otlp_http import MAX_BODY_BYTES, BadExport, decode_export, export_response
from ragmeter.serve.page import DEFAULT_BY, DEFAULT_HOURS, page_figures
from ragmeter.serve.prometheus import StoreCollector
from ragmeter.serve.scorer import Scorer
from ragmeter.serve.store import Store, StoreUnavailable

__all__ = ["MAX_BACKLOG", "RETRY_AFTER_S", "create_app"]

_LOG = logging.getLogger("ragmeter.serve")
#: Traces received and not yet scored from which the receiver asks exporters to retry later.
MAX_BACKLOG = 10_000
RETRY_AFTER_S = 5
#: Seconds the scoring thread waits when nothing is due.
IDLE_S = 1.0


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadExport(413, f"the body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BadExport(413, f"the body is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _loop(name: str, stop: threading.Event, step: Callable[[], bool], idle_s: float) -> threading.Thread:
    """A thread that calls ``step`` until ``stop`` is set, waiting ``idle_s`` after a call that found nothing to
    do; a call that fails is logged and tried again after a pause (what it was doing stays to be done)."""

    def run() -> None:
        while not stop.is_set():
            try:
                busy = step()
            except Exception as exc:  # noqa: BLE001 -- logged, tried again: the store still holds what is to be done
                _LOG.warning(
                    "%s failed (%s); trying again in %s s",
                    name,
                    exc,
                    RETRY_AFTER_S,
                    exc_info=not isinstance(exc, ForwardError),
                )
                stop.wait(RETRY_AFTER_S)
                continue
            if not busy:
                stop.wait(idle_s)

    thread = threading.Thread(target=run, name=f"ragmeter-{name.replace(' ', '-')}", daemon=True)
    thread.start()
    return thread


def create_app(
    store: Store,
    scorer: Scorer | None = None,
    *,
    watch: DropWatch | None = None,
    forwarder: Forwarder | None = None,
    max_backlog: int = MAX_BACKLOG,
    max_body_bytes: int = MAX_BODY_BYTES,
    idle_s: float = IDLE_S,
) -> Starlette:
    """The app receiving into ``store``; with ``scorer``, a thread scores what is due while the app runs, with
    ``watch`` another checks for drops when a check is due, and with ``forwarder`` another sends the scores on."""

    async def traces(request: Request) -> Response:
        backlog = await run_in_threadpool(store.backlog)
        if backlog["open"] + backlog["due"] >= max_backlog:
            return PlainTextResponse(
                f"scoring is behind ({backlog['open'] + backlog['due']} traces waiting): retry later",
                status_code=503,
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        content_type = request.headers.get("content-type")
        try:
            body = await _body(request, max_body_bytes)
            export = decode_export(
                body, content_type, request.headers.get("content-encoding"), max_bytes=max_body_bytes
            )
        except BadExport as refused:
            return PlainTextResponse(refused.message, status_code=refused.status)
        try:
            accepted = await run_in_threadpool(store.accept, export, source="POST /v1/traces")
        except StoreUnavailable as unavailable:
            _LOG.warning("%s; the exporter is asked to retry in %s s", unavailable, RETRY_AFTER_S)
            return PlainTextResponse(
                f"{unavailable}: retry later", status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)}
            )
        first = str(accepted.problems[0]) if accepted.problems else ""
        reply, media = export_response(content_type, len(accepted.problems), first)
        return Response(reply, media_type=media)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        stop = threading.Event()
        workers = []
        if scorer is not None:
            workers.append(_loop("scoring the due traces", stop, lambda: bool(scorer.score_due()), idle_s))
        if watch is not None:
            workers.append(_loop("checking for drops", stop, lambda: watch.due() is not None, idle_s))
        if forwarder is not None:
            workers.append(_loop("forwarding the scores", stop, lambda: bool(forwarder.forward_due()), idle_s))
        try:
            yield
        finally:
            stop.set()
            for worker in workers:
                worker.join()

    async def page(request: Request) -> Response:
        by = request.query_params.get("by", DEFAULT_BY)
        try:
            hours = float(request.query_params.get("hours", DEFAULT_HOURS))
            figures = await run_in_threadpool(page_figures, store, by=by, hours=hours, watching=watch is not None)
        except (ValueError, ConfigError) as refused:
            return PlainTextResponse(f"bad query: {refused}", status_code=400)
        html = await run_in_threadpool(render_serve_html, title="ragmeter serve", **figures)
        return HTMLResponse(html)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(store))

    async def metrics(request: Request) -> Response:
        return Response(await run_in_threadpool(generate_latest, registry), media_type=CONTENT_TYPE_LATEST)

    return Starlette(
        routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/metrics", metrics), Route("/", page)],
        lifespan=lifespan,
    )
