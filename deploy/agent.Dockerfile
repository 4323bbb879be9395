# The a2a-sdk example agent for deploy/compose.yaml. Build from the repository root:
#   docker build -f deploy/agent.Dockerfile -t cardgate-example-agent .
FROM python:3.11-slim
WORKDIR /app
COPY tests/agents/requirements.txt /app/requirements.txt
RUN pip install --no-cache-dir --disable-pip-version-check -r /app/requirements.txt \
 && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin agent
# sdk_agent.py is the agent the integration tests use; serve.py makes it bind AGENT_HOST
# and advertise AGENT_PUBLIC_URL in its card (see deploy/agent/serve.py).
COPY tests/agents/sdk_agent.py deploy/agent/serve.py /app/
USER 10001
ENV AGENT_HOST=0.0.0.0 \
    PYTHONUNBUFFERED=1
EXPOSE 9999
CMD ["python", "/app/serve.py", "9999"]
