#!/usr/bin/env bash
# End-to-end benchmark on loopback, all in one run:
#   direct   client → bench agent
#   cardgate client → cardgate (enforcing the agent's card limits) → bench agent
#   nginx    client → nginx (plain reverse proxy, request buffering off) → bench agent
# for (a) small SendMessage requests at fixed concurrency (requests/s, p50, p99) and
#     (b) ~20 MB inline-file uploads (MB/s).
# The bench agent (examples/bench_agent.rs) reads every body in full before answering.
#
# Needs: wrk, nginx (Debian packages). Tunables: DURATION (5s per run), ROUNDS (3),
# SMALL_CONNS (32), UPLOAD_CONNS (2). Prints per-target medians, the CPU time each proxy (and
# the agent, for direct) spent per small request (user + system, from /proc), and the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-3}
SMALL_CONNS=${SMALL_CONNS:-32}
UPLOAD_CONNS=${UPLOAD_CONNS:-2}
for tool in wrk nginx; do
  command -v $tool >/dev/null || { echo "e2e: $tool not found (apt-get install wrk nginx-light)" >&2; exit 2; }
done

scripts/setup --no-python
cargo build --release --quiet --bin cardgate --example bench_agent
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
AGENT=$(port); GW=$(port); ADMIN=$(port); NGX=$(port)

python3 - "$work" <<'PY'
import base64, json, os, sys
d = sys.argv[1]
small = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
    "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Summarize the attached notes, please."}]}}}
open(os.path.join(d, "small.json"), "w").write(json.dumps(small))
blob = base64.b64encode(os.urandom(15 * 1024 * 1024)).decode()
upload = {"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": {
    "messageId": "m2", "role": "ROLE_USER",
    "parts": [{"text": "here"}, {"raw": blob, "mediaType": "application/octet-stream", "filename": "blob.bin"}]}}}
open(os.path.join(d, "upload.json"), "w").write(json.dumps(upload))
PY
UPLOAD_BYTES=$(stat -c %s "$work/upload.json")

cat > "$work/post.lua" <<'LUA'
local f = io.open(os.getenv("BODY"), "rb"); wrk.body = f:read("*a"); f:close()
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["A2A-Version"] = "1.0"
LUA

target/release/examples/bench_agent "$AGENT" & pids+=($!); AGENT_PID=$!
cat > "$work/gateway.yaml" <<YAML
listen: 127.0.0.1:$GW
admin_listen: 127.0.0.1:$ADMIN
log: {level: warn}
agents:
  - id: bench
    upstream: http://127.0.0.1:$AGENT
YAML
target/release/cardgate run --config "$work/gateway.yaml" 2>"$work/cardgate.log" & pids+=($!); GW_PID=$!
cat > "$work/nginx.conf" <<NGINX
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/nginx-body;
  proxy_temp_path $work/nginx-proxy;
  upstream agent { server 127.0.0.1:$AGENT; keepalive 64; }
  server {
    listen 127.0.0.1:$NGX;
    client_max_body_size 100m;
    location / {
      proxy_pass http://agent;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_request_buffering off;
      proxy_buffering off;
    }
  }
}
NGINX
nginx -c "$work/nginx.conf" -g 'daemon off;' & pids+=($!); NGX_PID=$!

for i in $(seq 100); do
  curl -sf "http://127.0.0.1:$GW/agents/bench/.well-known/agent-card.json" >/dev/null 2>&1 \
    && curl -sf "http://127.0.0.1:$NGX/.well-known/agent-card.json" >/dev/null 2>&1 && break
  sleep 0.1
done

# CPU ticks (user, system) of a process and its children (nginx's workers).
ticks() {
  local u=0 s=0 p a b
  for p in $1 $(pgrep -P "$1"); do
    read -r a b < <(awk '{print $14, $15}' "/proc/$p/stat" 2>/dev/null || echo "0 0")
    u=$((u + a)); s=$((s + b))
  done
  echo "$u $s"
}
TICK=$(getconf CLK_TCK)

run() { # name url body conns pid → name req/s p50 p99 user-us/req sys-us/req
  local out u1 s1 u2 s2
  read -r u1 s1 < <(ticks "$5")
  out=$(BODY="$3" wrk -t1 -c"$4" -d"$DURATION" --latency -s "$work/post.lua" "$2")
  read -r u2 s2 < <(ticks "$5")
  if grep -q "Non-2xx" <<<"$out"; then echo "e2e: $1 answered non-2xx:" >&2; echo "$out" >&2; exit 1; fi
  local rps p50 p99 n
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  echo "$1 $rps $p50 $p99 $(python3 -c "print(f'{($u2-$u1)/$TICK/$n*1e6:.1f} {($s2-$s1)/$TICK/$n*1e6:.1f}')")"
}

# Rounds interleave the three targets, so a burst of other load on the machine hits one
# round of each rather than all of one target; the table shows per-target medians.
echo "small SendMessage, $SMALL_CONNS connections; uploads of $UPLOAD_BYTES bytes, $UPLOAD_CONNS connections;"
echo "$ROUNDS interleaved rounds of $DURATION per target and load"
results="$work/results"
: > "$results"
for round in $(seq "$ROUNDS"); do
  for t in direct cardgate nginx; do
    case $t in
      direct) url="http://127.0.0.1:$AGENT/"; pid=$AGENT_PID ;;
      cardgate) url="http://127.0.0.1:$GW/agents/bench/"; pid=$GW_PID ;;
      nginx) url="http://127.0.0.1:$NGX/"; pid=$NGX_PID ;;
    esac
    read -r _ rps p50 p99 cpu_user cpu_sys < <(run "$t" "$url" "$work/small.json" "$SMALL_CONNS" "$pid")
    read -r _ urps _ _ _ _ < <(run "$t" "$url" "$work/upload.json" "$UPLOAD_CONNS" "$pid")
    echo "$round $t $rps $p50 $p99 $urps $cpu_user $cpu_sys" >> "$results"
    echo "  round $round $t: $rps req/s (p50 $p50, p99 $p99), $(python3 -c "print(f'{$urps * $UPLOAD_BYTES / 1e6:.0f}')") MB/s" >&2
  done
done
python3 - "$results" "$UPLOAD_BYTES" <<'PY'
import re, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
upload_bytes = int(sys.argv[2])
def ms(v):  # wrk latency like 1.06ms / 648.00us / 1.20s
    n, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", v).groups()
    return float(n) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
med = {}
print(f"{'target':<10} {'small req/s':>12} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/req (user+sys)':>22} {'upload MB/s':>12}")
for t in ["direct", "cardgate", "nginx"]:
    r = [x for x in rows if x[1] == t]
    rps = statistics.median(float(x[2]) for x in r)
    p50 = statistics.median(ms(x[3]) for x in r)
    p99 = statistics.median(ms(x[4]) for x in r)
    mbps = statistics.median(float(x[5]) for x in r) * upload_bytes / 1e6
    user = statistics.median(float(x[6]) for x in r)
    sys_ = statistics.median(float(x[7]) for x in r)
    med[t] = (rps, mbps)
    cpu = f"{user:.1f} + {sys_:.1f}"
    print(f"{t:<10} {rps:>12.0f} {p50:>8.2f} {p99:>8.2f} {cpu:>22} {mbps:>12.1f}")
(gs, gu), (ns, nu), (ds, du) = med["cardgate"], med["nginx"], med["direct"]
print(f"cardgate/nginx: small requests {gs/ns:.2f}x, uploads {gu/nu:.2f}x")
print(f"cardgate/direct: small requests {gs/ds:.2f}x, uploads {gu/du:.2f}x")
# The same ratio within each round shows how steady the machine was.
per_round = []
for rnd in sorted({x[0] for x in rows}, key=int):
    get = {x[1]: x for x in rows if x[0] == rnd}
    per_round.append(f"{float(get['cardgate'][2]) / float(get['nginx'][2]):.2f}x/{float(get['cardgate'][5]) / float(get['nginx'][5]):.2f}x")
print("per round (small/uploads vs nginx): " + ", ".join(per_round))
PY
