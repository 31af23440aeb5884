#!/usr/bin/env bash
# Smoke test of a running moraine-mcp over plain HTTP, with curl (and python3 for JSON).
#
#   tests/smoke.sh <server-base-url> [token]      e.g. tests/smoke.sh http://127.0.0.1:8080
#
# MCP_PATH overrides the endpoint path (default /mcp). With a token, every MCP request carries
# `Authorization: Bearer <token>` and the endpoint must refuse requests without it.
# Works against any store that holds a session: the query searched for is a word of the newest
# session's first prompt (SMOKE_QUERY overrides it).
# Steps: /healthz; the 2025-11-25 flow (initialize, notifications/initialized, tools/list,
# list_sessions, open of a session, search_sessions for a word it holds, open of a hit, DELETE
# when a session was issued); the 2026-07-28 stateless flow (tools/list, search_sessions, open
# with _meta and MCP-Protocol-Version/Mcp-Method/Mcp-Name).
# Prints one line per step; on the first deviation prints `FAIL smoke: <step>: <what was
# received>` to stderr and exits 1. Usage errors exit 2.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then
  echo "usage: $0 <server-base-url> [token]" >&2
  exit 2
fi
BASE=${1%/}
TOKEN=${2:-}
MCP="$BASE${MCP_PATH:-/mcp}"
QUERY=${SMOKE_QUERY:-}
LEGACY=2025-11-25
MODERN=2026-07-28

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

STEP=start
fail() {
  echo "FAIL smoke: $STEP: $*" >&2
  exit 1
}
ok() { echo "smoke: $STEP: ok${1:+ ($1)}"; }

# Parses and checks response bodies; JSON or SSE (`data:` lines). Prints a short detail on
# success; on failure prints what was received and exits 1.
PY=$(
  cat <<'PYEOF'
import json, re, sys

def clip(text, limit=400):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."

def die(message):
    print(message)
    sys.exit(1)

def headers(path):
    # The last header block (curl -D also records interim 1xx responses).
    blocks, current = [], {}
    for line in open(path, encoding="latin-1").read().splitlines():
        if line.startswith("HTTP/"):
            current = {}
            blocks.append(current)
        elif ":" in line:
            name, value = line.split(":", 1)
            current[name.strip().lower()] = value.strip()
    return blocks[-1] if blocks else {}

def body_json(hpath, bpath, want_id):
    raw = open(bpath, encoding="utf-8", errors="replace").read()
    ctype = headers(hpath).get("content-type", "")
    if "text/event-stream" in ctype:
        messages, data = [], []
        for line in raw.splitlines() + [""]:
            if line == "":
                if data and "".join(data).strip():
                    try:
                        messages.append(json.loads("\n".join(data)))
                    except ValueError:
                        die(f"unparsable SSE data: {clip(chr(10).join(data))}")
                data = []
            elif line.startswith("data:"):
                data.append(line[5:][1:] if line[5:6] == " " else line[5:])
        for message in messages:
            if isinstance(message, dict) and message.get("id") == want_id:
                return message
        die(f"no JSON-RPC response with id {want_id} in SSE body: {clip(raw)}")
    if "application/json" not in ctype:
        die(f"unexpected content-type {ctype!r}, body: {clip(raw)}")
    try:
        message = json.loads(raw)
    except ValueError:
        die(f"unparsable JSON body: {clip(raw)}")
    if not isinstance(message, dict) or message.get("id") != want_id:
        die(f"expected a JSON-RPC response with id {want_id}, got: {clip(raw)}")
    return message

def result_of(message, modern):
    if "error" in message:
        die(f"JSON-RPC error: {clip(json.dumps(message['error']))}")
    result = message.get("result")
    if not isinstance(result, dict):
        die(f"no result object: {clip(json.dumps(message))}")
    if modern and result.get("resultType") != "complete":
        die(f"2026-07-28 result without resultType \"complete\": {clip(json.dumps(result))}")
    return result

def tool_result(result, tool, schema):
    sc = result.get("structuredContent")
    if result.get("isError") is not False and result.get("isError") is not None:
        die(f"isError {result.get('isError')}: {clip(json.dumps(result))}")
    if not isinstance(sc, dict):
        die(f"no structuredContent: {clip(json.dumps(result))}")
    if sc.get("schema_version") != schema:
        die(f"structuredContent.schema_version {sc.get('schema_version')!r}, expected {schema}")
    content = result.get("content") or []
    if not any(isinstance(c, dict) and c.get("type") == "text" and c.get("text") for c in content):
        die(f"no text content block: {clip(json.dumps(result))}")
    return sc

def main():
    kind, hpath, bpath, want_id, modern = sys.argv[1:6]
    extra = sys.argv[6:]
    modern = modern == "modern"
    if kind == "health":
        raw = open(bpath, encoding="utf-8", errors="replace").read()
        try:
            health = json.loads(raw)
        except ValueError:
            die(f"unparsable body: {clip(raw)}")
        if health.get("status") != "ok":
            die(f"status is {health.get('status')!r}: {clip(raw)}")
        print(f"clickhouse {health.get('clickhouse')}, schema {health.get('schema_version')}, version {health.get('version')}")
        return
    message = body_json(hpath, bpath, int(want_id))
    result = result_of(message, modern)
    if kind == "initialize":
        if result.get("protocolVersion") != extra[0]:
            die(f"protocolVersion {result.get('protocolVersion')!r}, expected {extra[0]}")
        info = result.get("serverInfo") or {}
        if not info.get("name"):
            die(f"no serverInfo.name: {clip(json.dumps(result))}")
        if "tools" not in (result.get("capabilities") or {}):
            die(f"no tools capability: {clip(json.dumps(result))}")
        print(f"{info.get('name')} {info.get('version')}, protocol {result['protocolVersion']}")
    elif kind == "tools":
        tools = result.get("tools")
        if not isinstance(tools, list):
            die(f"no tools array: {clip(json.dumps(result))}")
        names = [t.get("name") for t in tools]
        if sorted(names) != ["list_sessions", "open", "search_sessions"]:
            die(f"tools are {names}, expected search_sessions, list_sessions, open")
        for tool in tools:
            for key in ("inputSchema", "outputSchema"):
                schema = tool.get(key)
                if not isinstance(schema, dict) or schema.get("type") != "object":
                    die(f"tool {tool.get('name')}: {key} is not an object schema: {clip(json.dumps(schema))}")
        print(", ".join(names))
    elif kind == "search":
        sc = tool_result(result, "search_sessions", "moraine.mcp.search_sessions.v1")
        hits = (sc.get("data") or {}).get("results") or []
        if not hits:
            die(f"no hits: {clip(json.dumps(sc))}")
        event_id = (hits[0].get("open") or {}).get("event_id")
        if not isinstance(event_id, str) or not event_id.startswith("event:"):
            die(f"first hit has no open.event_id: {clip(json.dumps(hits[0]))}")
        print(f"{len(hits)} hits, first {event_id}")
    elif kind == "list":
        sc = tool_result(result, "list_sessions", "moraine.mcp.list_sessions.v1")
        sessions = (sc.get("data") or {}).get("sessions") or []
        if not sessions:
            die("the store holds no sessions: ingest or push some logs first")
        session_id = (sessions[0].get("open") or {}).get("session_id")
        if not isinstance(session_id, str) or not session_id.startswith("session:"):
            die(f"first session has no open.session_id: {clip(json.dumps(sessions[0]))}")
        print(f"{len(sessions)} sessions, newest {session_id}")
    elif kind == "session":
        sc = tool_result(result, "open", "moraine.mcp.open.v1")
        turns = (sc.get("data") or {}).get("turns") or []
        prompts = [(t.get("user_input") or {}).get("text") or "" for t in turns]
        words = [w for p in prompts for w in re.findall(r"[A-Za-z]{3,}", p)]
        if not words:
            die(f"the session has no prompt with a word to search for: {clip(json.dumps(sc))}")
        print(max(words, key=len).lower())
    elif kind == "open":
        sc = tool_result(result, "open", "moraine.mcp.open.v1")
        if extra[0] not in json.dumps(sc.get("data")):
            die(f"the result does not mention {extra[0]}: {clip(json.dumps(sc))}")
        print(f"opened {extra[0]}")
    else:
        die(f"unknown check {kind}")

main()
PYEOF
)

# check <kind> <id> <legacy|modern> [extra]: validates the last response; prints its detail.
check() {
  local kind=$1 id=$2 era=$3
  shift 3
  local out
  if ! out=$(python3 -c "$PY" "$kind" "$WORK/h" "$WORK/b" "$id" "$era" "$@"); then
    fail "$out"
  fi
  printf '%s' "$out"
}

first_line() { head -c 300 "$WORK/b" | tr -s '\r\n\t' '   '; }

# request <method> <url> [curl args...]: sets STATUS, saves headers to $WORK/h and body to $WORK/b.
request() {
  local method=$1 url=$2
  shift 2
  : >"$WORK/h"
  : >"$WORK/b"
  if ! STATUS=$(curl -sS --max-time 30 -X "$method" -D "$WORK/h" -o "$WORK/b" -w '%{http_code}' "$@" "$url" 2>"$WORK/e"); then
    fail "curl $method $url failed: $(tr -s '\n' ' ' <"$WORK/e")"
  fi
}

expect_status() {
  local want=$1
  [ "$STATUS" = "$want" ] || fail "HTTP $STATUS (expected $want): $(first_line)"
}

header() { # header <name>: value of a response header in the last response, or empty
  awk -v n="$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]')" -F': *' \
    'tolower($1)==n { sub(/^[^:]*: */, ""); gsub(/\r/, ""); v=$0 } END { print v }' "$WORK/h"
}

AUTH=()
[ -n "$TOKEN" ] && AUTH=(-H "Authorization: Bearer $TOKEN")
JSON=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')

# POST a JSON-RPC message to the MCP endpoint with the common headers plus any given.
post() {
  local body=$1
  shift
  request POST "$MCP" "${JSON[@]}" ${AUTH[@]+"${AUTH[@]}"} "$@" --data-binary "$body"
}

STEP="GET /healthz"
request GET "$BASE/healthz"
expect_status 200
DETAIL=$(check health 0 legacy)
ok "$DETAIL"

if [ -n "$TOKEN" ]; then
  STEP="auth: no token"
  request POST "$MCP" "${JSON[@]}" --data-binary '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
  expect_status 401
  case "$(header WWW-Authenticate)" in Bearer*) ;; *) fail "401 without a Bearer WWW-Authenticate challenge" ;; esac
  ok 401
  STEP="auth: wrong token"
  request POST "$MCP" "${JSON[@]}" -H "Authorization: Bearer wrong-${TOKEN}" --data-binary '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
  expect_status 401
  ok 401
fi

# --- 2025-11-25: initialize handshake, optional session -----------------------------------
STEP="$LEGACY initialize"
post '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"'$LEGACY'","capabilities":{},"clientInfo":{"name":"moraine-smoke","version":"1.0.0"}}}'
expect_status 200
DETAIL=$(check initialize 1 legacy "$LEGACY")
SID=$(header Mcp-Session-Id)
if [ -n "$SID" ]; then ok "$DETAIL, session issued"; else ok "$DETAIL, no session"; fi

S=(-H "MCP-Protocol-Version: $LEGACY")
[ -n "$SID" ] && S+=(-H "Mcp-Session-Id: $SID")

STEP="$LEGACY notifications/initialized"
post '{"jsonrpc":"2.0","method":"notifications/initialized"}' "${S[@]}"
expect_status 202
ok 202

STEP="$LEGACY tools/list"
post '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' "${S[@]}"
expect_status 200
DETAIL=$(check tools 2 legacy)
ok "$DETAIL"

STEP="$LEGACY tools/call list_sessions"
post '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"list_sessions","arguments":{"start_datetime":"2000-01-01T00:00:00Z","end_datetime":"2100-01-01T00:00:00Z","limit":5}}}' "${S[@]}"
expect_status 200
DETAIL=$(check list 6 legacy)
SESSION=${DETAIL##* }
ok "$DETAIL"

STEP="$LEGACY tools/call open (session)"
post '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"open","arguments":{"id":"'"$SESSION"'"}}}' "${S[@]}"
expect_status 200
WORD=$(check session 7 legacy)
QUERY=${QUERY:-$WORD}
ok "query \"$QUERY\""

STEP="$LEGACY tools/call search_sessions"
post '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_sessions","arguments":{"query":"'"$QUERY"'","n_hits":5}}}' "${S[@]}"
expect_status 200
DETAIL=$(check search 3 legacy)
EVENT=${DETAIL##* }
ok "$DETAIL"

STEP="$LEGACY tools/call open"
post '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"open","arguments":{"id":"'"$EVENT"'"}}}' "${S[@]}"
expect_status 200
DETAIL=$(check open 4 legacy "$EVENT")
ok "$DETAIL"

if [ -n "$SID" ]; then
  STEP="$LEGACY DELETE session"
  request DELETE "$MCP" ${AUTH[@]+"${AUTH[@]}"} "${S[@]}"
  case "$STATUS" in
    200 | 202 | 204)
      ok "$STATUS"
      STEP="$LEGACY request after DELETE"
      post '{"jsonrpc":"2.0","id":5,"method":"tools/list"}' "${S[@]}"
      expect_status 404
      ok "404 for the ended session"
      ;;
    405) ok "405, the server keeps sessions until they expire" ;;
    *) fail "HTTP $STATUS (expected 200, 202, 204 or 405): $(first_line)" ;;
  esac
fi

# --- 2026-07-28: stateless, every request carries _meta and the routing headers -------------
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"'$MODERN'","io.modelcontextprotocol/clientInfo":{"name":"moraine-smoke","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}'
M=(-H "MCP-Protocol-Version: $MODERN")

no_session() {
  [ -z "$(header Mcp-Session-Id)" ] || fail "a 2026-07-28 response issued Mcp-Session-Id $(header Mcp-Session-Id)"
}

STEP="$MODERN tools/list"
post '{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{'"$META"'}}' "${M[@]}" -H 'Mcp-Method: tools/list'
expect_status 200
DETAIL=$(check tools 11 modern)
no_session
ok "$DETAIL"

STEP="$MODERN tools/call search_sessions"
post '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"search_sessions","arguments":{"query":"'"$QUERY"'","n_hits":5},'"$META"'}}' \
  "${M[@]}" -H 'Mcp-Method: tools/call' -H 'Mcp-Name: search_sessions'
expect_status 200
DETAIL=$(check search 12 modern)
EVENT=${DETAIL##* }
no_session
ok "$DETAIL"

STEP="$MODERN tools/call open"
post '{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"open","arguments":{"id":"'"$EVENT"'"},'"$META"'}}' \
  "${M[@]}" -H 'Mcp-Method: tools/call' -H 'Mcp-Name: open'
expect_status 200
DETAIL=$(check open 13 modern "$EVENT")
no_session
ok "$DETAIL"

echo "smoke: all steps passed against $MCP"
