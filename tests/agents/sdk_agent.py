"""A real A2A agent built with the a2a-sdk (1.x), for cardgate's integration tests.

It serves the card, JSON-RPC v1.0 plus the v0.3 compat layer at `/`, and REST v1.0 at
`/rest` (with the v0.3 REST paths under `/rest/v1/...`). It answers each message with a
line per part and records every HTTP request it receives (path, body length, body
sha256), so tests can assert what reached the agent and what did not:

    GET  /_test/requests   -> {"requests": [{"method", "path", "length", "sha256"}, ...]}
    POST /_test/reset      -> clears the record

Usage: sdk_agent.py PORT [--params JSON] [--no-streaming] [--required-extension URI]
"""

import argparse
import hashlib
import json

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
)
from google.protobuf import struct_pb2

INPUT_CONSTRAINTS = "https://inkeep.com/a2a-extensions/input-constraints/v1"
RECORD = []


def describe(part) -> str:
    kind = part.WhichOneof("content")
    if kind == "text":
        return f"text:{len(part.text)}"
    if kind == "raw":
        digest = hashlib.sha256(part.raw).hexdigest()
        return f"file:{part.filename}:{part.media_type}:{len(part.raw)}:{digest}"
    if kind == "url":
        return f"url:{part.url}"
    return f"{kind}"


class Describe(AgentExecutor):
    async def execute(self, ctx: RequestContext, q: EventQueue) -> None:
        lines = [describe(p) for p in ctx.message.parts]
        await q.enqueue_event(
            Message(
                role=Role.ROLE_AGENT,
                message_id="re-" + ctx.message.message_id,
                context_id=ctx.context_id,
                parts=[Part(text="\n".join(lines))],
            )
        )

    async def cancel(self, ctx, q):
        raise NotImplementedError


class Recorder:
    """ASGI middleware: records each request's path and body digest."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].startswith("/_test/"):
            return await self.app(scope, receive, send)
        body = bytearray()
        more = True
        while more:
            message = await receive()
            body.extend(message.get("body", b""))
            more = message.get("more_body", False)
        RECORD.append(
            {
                "method": scope["method"],
                "path": scope["path"],
                "query": scope["query_string"].decode(),
                "length": len(body),
                "sha256": hashlib.sha256(body).hexdigest(),
                "headers": {k.decode(): v.decode() for k, v in scope["headers"]},
            }
        )
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        return await self.app(scope, replay, send)


async def requests(_):
    return JSONResponse({"requests": RECORD})


async def reset(_):
    RECORD.clear()
    return JSONResponse({"ok": True})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--params", help="input-constraints extension params (JSON)")
    ap.add_argument("--no-streaming", action="store_true")
    ap.add_argument("--required-extension")
    ap.add_argument("--input-modes", default="text/plain,image/png,image/jpeg,image/gif,image/webp,image/bmp,application/pdf,application/octet-stream")
    args = ap.parse_args()
    base = f"http://127.0.0.1:{args.port}"

    extensions = []
    if args.params:
        params = struct_pb2.Struct()
        params.update(json.loads(args.params))
        extensions.append(AgentExtension(uri=INPUT_CONSTRAINTS, description="input limits", required=False, params=params))
    if args.required_extension:
        extensions.append(AgentExtension(uri=args.required_extension, description="required", required=True))

    card = AgentCard(
        name="sdk test agent",
        description="describes the parts it receives",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=not args.no_streaming, push_notifications=False, extensions=extensions),
        default_input_modes=args.input_modes.split(","),
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="describe", name="Describe", description="describes parts", tags=["test"])],
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=f"{base}/"),
            AgentInterface(protocol_binding="JSONRPC", protocol_version="0.3", url=f"{base}/"),
            AgentInterface(protocol_binding="HTTP+JSON", protocol_version="1.0", url=f"{base}/rest"),
        ],
    )
    handler = DefaultRequestHandler(agent_executor=Describe(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = (
        [Route("/_test/requests", requests), Route("/_test/reset", reset, methods=["POST"])]
        + create_agent_card_routes(card)
        + create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True)
        + create_rest_routes(handler, path_prefix="/rest", enable_v0_3_compat=True)
    )
    app = Recorder(Starlette(routes=routes))
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
