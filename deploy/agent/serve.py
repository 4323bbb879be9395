"""Runs the a2a-sdk example agent (tests/agents/sdk_agent.py) inside a container.

sdk_agent.py binds 127.0.0.1 and names http://127.0.0.1:PORT in its card, which nothing
outside its own container can reach. This wrapper leaves the test agent untouched and
changes only those two things:
  AGENT_HOST        address to bind (default 0.0.0.0)
  AGENT_PUBLIC_URL  base URL written into the card's interfaces (default http://127.0.0.1:PORT),
                    e.g. http://agent:9999 so cardgate in the next container can forward to it.
Usage: serve.py PORT [sdk_agent.py options]
"""

import os
import sys

import uvicorn

import sdk_agent


def main():
    port = sys.argv[1] if len(sys.argv) > 1 else "9999"
    own_base = f"http://127.0.0.1:{port}"
    public_base = os.environ.get("AGENT_PUBLIC_URL", own_base).rstrip("/")
    host = os.environ.get("AGENT_HOST", "0.0.0.0")

    make_interface = sdk_agent.AgentInterface

    def public_interface(**fields):
        url = fields.get("url", "")
        if url.startswith(own_base):
            fields["url"] = public_base + url[len(own_base):]
        return make_interface(**fields)

    serve = uvicorn.run

    def serve_on_host(app, **options):
        options["host"] = host
        return serve(app, **options)

    sdk_agent.AgentInterface = public_interface
    uvicorn.run = serve_on_host
    sdk_agent.main()


if __name__ == "__main__":
    main()
