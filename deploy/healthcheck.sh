#!/usr/bin/env bash
# Container health check: GET /healthz on cardgate's admin listener through bash's /dev/tcp,
# so the runtime image needs neither curl nor wget. Exit 0 on HTTP 200, else 1.
# CARDGATE_HEALTH_ADDR=host:port overrides the default 127.0.0.1:9090.
set -uo pipefail
addr="${CARDGATE_HEALTH_ADDR:-127.0.0.1:9090}"
host="${addr%:*}"
port="${addr##*:}"
if ! exec 3<>"/dev/tcp/${host}/${port}"; then
  echo "unhealthy: cannot connect to ${addr}" >&2
  exit 1
fi
printf 'GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$addr" >&3
status=""
IFS= read -r -t 3 status <&3 || true
case "$status" in
  "HTTP/1."?" 200 "*) exit 0 ;;
esac
echo "unhealthy: GET http://${addr}/healthz answered ${status:-nothing}" >&2
exit 1
