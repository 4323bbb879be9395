"""The a2a-sdk (1.x) client, driven by cardgate's integration tests.

Usage: sdk_client.py AGENT_URL send|stream TEXT [--file NAME MEDIA_TYPE SIZE] [--transport JSONRPC|HTTP+JSON]

Resolves the card from AGENT_URL (the gateway's agent URL), sends one message and prints
one JSON object per line: {"event": ...} for each response, or
{"error": <exception class>, "message": <message>} if the client raised.
"""

import argparse
import asyncio
import json
import sys

import httpx
from google.protobuf import json_format

from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("mode", choices=["send", "stream"])
    ap.add_argument("text")
    ap.add_argument("--file", nargs=3, metavar=("NAME", "MEDIA_TYPE", "SIZE"))
    ap.add_argument("--transport", default="JSONRPC")
    args = ap.parse_args()

    parts = [Part(text=args.text)]
    if args.file:
        name, media, size = args.file
        parts.append(Part(raw=bytes(range(256)) * (int(size) // 256) + bytes(int(size) % 256), filename=name, media_type=media))
    async with httpx.AsyncClient(timeout=30) as http:
        config = ClientConfig(
            streaming=args.mode == "stream",
            httpx_client=http,
            supported_protocol_bindings=[args.transport],
        )
        try:
            client = await create_client(args.url, client_config=config)
            request = SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id="m-1", parts=parts))
            async for event in client.send_message(request):
                print(json.dumps({"event": json_format.MessageToDict(event)}), flush=True)
        except Exception as e:  # the test asserts on the type and message
            print(json.dumps({"error": type(e).__name__, "message": str(e)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
