#!/usr/bin/env bash
# Checks the deployment files without running any of them:
#   1. docker-compose.yml      `docker compose config` with dummy secrets (and fails without them),
#                              plus the settings moraine-mcp reads from it (TOML in env values).
#      deploy/cluster/         the cluster compose file: `docker compose config`, and the same
#                              2x2 cluster and 3 Keeper nodes in compose, cluster.xml, keeper.xml.
#      deploy/compose.https.yml the HTTPS override (Caddy in front): `docker compose config` of
#                              both files with dummy values; moraine-mcp publishes no port, Caddy
#                              publishes 443 with deploy/caddy/Caddyfile; its OAuth variables
#                              are settings of config/moraine-mcp.toml.
#      Dockerfile              every file the crate compiles in (include_str!) is copied and not
#                              excluded by .dockerignore; pinned bases, non-root user, HEALTHCHECK.
#                              (The image itself is not built here: that needs a Docker engine.)
#      deploy/systemd/         the team server's unit: the keys docs/team.md relies on (user, state
#                              directory, environment file, `up --no-ingest` on loopback, restart,
#                              a stop that lets moraine-mcp finish, hardening); its MORAINE_MCP_*
#                              variables are settings of config/moraine-mcp.toml; its `up` options
#                              exist (`up --help` of a built target/ binary, when there is one);
#                              `systemd-analyze verify` when available.
#   2. openapi/openapi.yaml    Redocly CLI lint (recommended-strict), and its paths against the
#                              routes in src/server.rs, src/server/ and src/auth/metadata.rs.
#   3. deploy/prometheus/      structure, PromQL syntax, metric names and bucket edges against
#                              src/metrics.rs; `promtool check config|rules` and rule unit tests.
#   4. deploy/grafana/         dashboard JSON structure, PromQL, metric names; provisioning files.
#
# Needs Python 3.11+ and Node.js 20.19+ with npm. Tools are installed on first use under
# target/deploy-check/ (a Python venv from PyPI, Redocly from npm with tests/deploy's lockfile).
# `docker compose` (the compose v2 plugin) and `promtool` are used when on PATH; otherwise, on
# Debian, both are fetched once from Debian's archive (packages docker-compose and promtool).
# Without compose the check fails; without promtool its part is skipped with a warning.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
WORK=$ROOT/target/deploy-check
mkdir -p "$WORK"

step() { printf '\n--> %s\n' "$*"; }
fail() {
    printf '\ncheck.sh: FAILED: %s\n' "$*" >&2
    exit 1
}
warn() { printf 'check.sh: warning: %s\n' "$*" >&2; }

# ------------------------------------------------------------------------------------------
# Tools
# ------------------------------------------------------------------------------------------

PY_REQUIREMENTS="PyYAML==6.0.3 promql-parser==0.12.0"
VENV=$WORK/venv

ensure_python() {
    local python=${PYTHON:-python3}
    command -v "$python" >/dev/null || fail "python3 not found (Python 3.11+ is needed)"
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
        fail "Python 3.11+ is needed (tomllib); found $("$python" --version 2>&1)"
    if [ "$(cat "$VENV/.requirements" 2>/dev/null)" != "$PY_REQUIREMENTS" ]; then
        step "installing $PY_REQUIREMENTS into target/deploy-check/venv"
        rm -rf "$VENV"
        "$python" -m venv "$VENV" || fail "cannot create a Python venv (on Debian: apt-get install python3-venv)"
        # shellcheck disable=SC2086
        "$VENV/bin/pip" install --quiet --disable-pip-version-check $PY_REQUIREMENTS ||
            fail "pip could not install $PY_REQUIREMENTS"
        echo "$PY_REQUIREMENTS" >"$VENV/.requirements"
    fi
}

ensure_redocly() {
    local dir=$ROOT/tests/deploy
    command -v npm >/dev/null || fail "npm not found (Node.js 20.19+ with npm is needed)"
    local want
    want=$("${PYTHON:-python3}" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' \
        "$dir/package-lock.json")
    if [ "$(cat "$dir/node_modules/.lock-sha256" 2>/dev/null)" != "$want" ]; then
        step "npm ci in tests/deploy (Redocly CLI)"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci failed in tests/deploy"
        echo "$want" >"$dir/node_modules/.lock-sha256"
    fi
    REDOCLY=$dir/node_modules/.bin/redocly
}

# Fetches one file out of a Debian package (current stable) into target/deploy-check/bin,
# using apt with private state under target/deploy-check/apt (nothing is installed system-wide).
# The archive's address is taken from this machine's own apt sources.
debian_tool() {
    local package=$1 path=$2 name=$3
    local bin=$WORK/bin/$name
    [ -x "$bin" ] && { echo "$bin"; return 0; }
    command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || return 1
    local uri
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
        grep -Eo 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -n1 | tr -d ' ') || true
    [ -n "$uri" ] || return 1
    local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -r "$keyring" ] || return 1
    local apt=$WORK/apt
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/prefs.d" "$apt/debs" "$WORK/bin"
    echo "deb [signed-by=$keyring] ${uri%/} trixie main" >"$apt/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
        -o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::PreferencesParts=$apt/prefs.d"
        -o APT::Sandbox::User=root -o Debug::NoLocking=1)
    if [ ! -f "$apt/.updated" ]; then
        printf 'fetching the Debian package index (once, into target/deploy-check/apt)\n' >&2
        apt-get -qq "${opts[@]}" update >&2 || return 1
        touch "$apt/.updated"
    fi
    printf 'fetching Debian package %s (once, into target/deploy-check/bin)\n' "$package" >&2
    (cd "$apt/debs" && rm -f "${package}"_*.deb && apt-get -qq "${opts[@]}" download "$package" >&2) || return 1
    local unpack=$apt/unpack-$package
    rm -rf "$unpack"
    dpkg-deb -x "$apt/debs/${package}"_*.deb "$unpack" || return 1
    [ -x "$unpack/$path" ] || return 1
    cp "$unpack/$path" "$bin"
    rm -rf "$unpack"
    echo "$bin"
}

ensure_compose() {
    if docker compose version >/dev/null 2>&1; then
        COMPOSE=(docker compose)
    elif command -v docker-compose >/dev/null && docker-compose version 2>/dev/null | grep -Eq 'version v?2\.'; then
        COMPOSE=(docker-compose)
    else
        local bin
        bin=$(debian_tool docker-compose usr/libexec/docker/cli-plugins/docker-compose docker-compose) ||
            fail "Docker Compose v2 is needed: install the docker compose plugin (or run this on Debian, where it is fetched automatically)"
        COMPOSE=("$bin")
    fi
    echo "compose: $("${COMPOSE[@]}" version | head -n1)"
}

ensure_promtool() {
    PROMTOOL=
    if command -v promtool >/dev/null; then
        PROMTOOL=$(command -v promtool)
    else
        PROMTOOL=$(debian_tool promtool usr/bin/promtool promtool) || PROMTOOL=
    fi
    if [ -n "$PROMTOOL" ]; then
        echo "promtool: $("$PROMTOOL" --version 2>&1 | head -n1)"
    fi
}

# ------------------------------------------------------------------------------------------
# 1. docker-compose.yml
# ------------------------------------------------------------------------------------------

# Dummy values for the required variables: nothing here is a real secret.
DUMMY_ENV=(
    CLICKHOUSE_PASSWORD=check-password
    MORAINE_MCP_TOKEN=check-token-0123456789abcdef
)

compose() {
    # A clean environment, so a developer's own settings cannot mask a missing default.
    env -i PATH="$PATH" HOME="${HOME:-$ROOT}" ${DOCKER_CONFIG:+DOCKER_CONFIG="$DOCKER_CONFIG"} "$@"
}

check_compose() {
    step "docker-compose.yml: docker compose config"
    compose "${DUMMY_ENV[@]}" "${COMPOSE[@]}" -f docker-compose.yml --profile ingest --profile dashboards config -q ||
        fail "docker compose config rejected docker-compose.yml"
    compose "${DUMMY_ENV[@]}" "${COMPOSE[@]}" -f docker-compose.yml --profile ingest --profile dashboards \
        config --format json >"$WORK/compose.json" ||
        fail "docker compose config --format json failed"
    # The secrets must be required, not defaulted.
    local var out
    for var in CLICKHOUSE_PASSWORD MORAINE_MCP_TOKEN; do
        local env_without=()
        local kv
        for kv in "${DUMMY_ENV[@]}"; do [ "${kv%%=*}" = "$var" ] || env_without+=("$kv"); done
        if out=$(compose "${env_without[@]}" "${COMPOSE[@]}" -f docker-compose.yml config -q 2>&1); then
            fail "docker compose config succeeded without $var; it must be a required variable (\${$var:?...})"
        fi
        grep -q "$var" <<<"$out" || fail "docker compose config without $var failed, but not because of $var: $out"
    done
    echo "ok: config valid; CLICKHOUSE_PASSWORD and MORAINE_MCP_TOKEN are required"
}

# deploy/cluster/docker-compose.yml: 2 shards x 2 replicas and 3 Keeper nodes. Valid, and the
# same cluster everywhere it is named: the compose services, the servers' remote_servers and
# macros, the Keeper ensemble, and the cluster moraine-mcp is told to create its schema on.
check_cluster_compose() {
    step "deploy/cluster/docker-compose.yml: docker compose config, and one cluster throughout"
    local file=deploy/cluster/docker-compose.yml
    compose "${DUMMY_ENV[@]}" "${COMPOSE[@]}" -f "$file" config -q ||
        fail "docker compose config rejected $file"
    compose "${DUMMY_ENV[@]}" "${COMPOSE[@]}" -f "$file" config --format json >"$WORK/cluster-compose.json" ||
        fail "docker compose config --format json failed for $file"
    "${PYTHON:-python3}" - "$ROOT/deploy/cluster" "$WORK/cluster-compose.json" <<'PYTHON' || fail "the cluster deployment is inconsistent (above)"
import json, sys
import xml.etree.ElementTree as ET
from pathlib import Path

here, services = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())["services"]
problems = []
cluster_xml = ET.parse(here / "clickhouse/cluster.xml").getroot()
keeper_xml = ET.parse(here / "keeper/keeper.xml").getroot()

clusters = list(cluster_xml.find("remote_servers"))
if len(clusters) != 1:
    problems.append(f"cluster.xml defines {len(clusters)} clusters, expected one")
cluster = clusters[0]
shards = [[r.findtext("host") for r in shard.findall("replica")] for shard in cluster.findall("shard")]
if [len(s) for s in shards] != [2, 2]:
    problems.append(f"expected 2 shards of 2 replicas, cluster.xml has {shards}")
for shard in cluster.findall("shard"):
    if shard.findtext("internal_replication") != "true":
        problems.append("every shard needs internal_replication (the tables replicate themselves)")

servers = {name: s for name, s in services.items() if s.get("image", "").startswith("clickhouse/clickhouse-server")}
placed = {}
for name, s in servers.items():
    env = s.get("environment", {})
    placed[name] = (int(env.get("MORAINE_SHARD", 0)), env.get("MORAINE_REPLICA"))
    if s.get("hostname") != name or env.get("MORAINE_REPLICA") != name:
        problems.append(f"{name}: hostname and MORAINE_REPLICA must be the service name")
    mounts = [v.get("source", "") for v in s.get("volumes", [])]
    if not any(m.endswith("clickhouse/cluster.xml") for m in mounts):
        problems.append(f"{name} does not mount clickhouse/cluster.xml")
for i, hosts in enumerate(shards, 1):
    for host in hosts:
        if placed.get(host, (None,))[0] != i:
            problems.append(f"cluster.xml puts {host} in shard {i}; compose says {placed.get(host)}")
if sorted(placed) != sorted(h for hs in shards for h in hs):
    problems.append(f"compose servers {sorted(placed)} differ from cluster.xml's {shards}")
if len({r for _, r in placed.values()}) != len(placed):
    problems.append("replica names must be unique")

keepers = {name: s for name, s in services.items() if s.get("image", "").startswith("clickhouse/clickhouse-keeper")}
raft = {int(x.findtext("id")): x.findtext("hostname") for x in keeper_xml.find("keeper_server/raft_configuration")}
ids = {int(s["environment"]["KEEPER_SERVER_ID"]): s.get("hostname") for s in keepers.values()}
if len(keepers) != 3 or ids != raft:
    problems.append(f"keepers: compose has {ids}, keeper.xml's raft configuration {raft}; expected three, the same")
zk = sorted(n.findtext("host") for n in cluster_xml.find("zookeeper"))
if zk != sorted(raft.values()):
    problems.append(f"the servers know Keeper nodes {zk}, the ensemble is {sorted(raft.values())}")

for name in ("migrate", "moraine-mcp"):
    env = services[name].get("environment", {})
    if env.get("MORAINE_MCP_CLICKHOUSE__CLUSTER") != cluster.tag:
        problems.append(f"{name}: MORAINE_MCP_CLICKHOUSE__CLUSTER must be {cluster.tag!r}")
    url = env.get("MORAINE_MCP_CLICKHOUSE__URL", "")
    if not any(f"//{host}:8123" in url for host in placed):
        problems.append(f"{name}: {url} is not one of the cluster's servers")
deps = services["migrate"].get("depends_on", {})
if sorted(deps) != sorted(servers):
    problems.append("migrate must wait for every server (ON CLUSTER statements reach them all)")

for p in problems:
    print("problem:", p)
sys.exit(1 if problems else 0)
PYTHON
    echo "ok: 2 shards x 2 replicas and 3 Keeper nodes, named alike in compose, cluster.xml and keeper.xml"
}

# deploy/compose.https.yml over docker-compose.yml: Caddy terminates TLS in front of moraine-mcp
# (docs/authorization.md). Valid with dummy values, refused without the public URL, and shaped
# as the docs say.
check_compose_https() {
    step "deploy/compose.https.yml: docker compose config (with docker-compose.yml)"
    local files=(-f docker-compose.yml -f deploy/compose.https.yml)
    local https_env=("${DUMMY_ENV[@]}"
        MORAINE_MCP_SERVER__PUBLIC_URL=https://moraine.example.com
        MORAINE_MCP_AUTH__OAUTH__ISSUER=https://idp.example.com/realms/check)
    compose "${https_env[@]}" "${COMPOSE[@]}" "${files[@]}" config -q ||
        fail "docker compose config rejected docker-compose.yml with deploy/compose.https.yml"
    compose "${https_env[@]}" "${COMPOSE[@]}" "${files[@]}" config --format json >"$WORK/compose-https.json" ||
        fail "docker compose config --format json failed for deploy/compose.https.yml"
    local out
    if out=$(compose "${DUMMY_ENV[@]}" "${COMPOSE[@]}" "${files[@]}" config -q 2>&1); then
        fail "deploy/compose.https.yml is valid without MORAINE_MCP_SERVER__PUBLIC_URL; it must be required"
    fi
    grep -q MORAINE_MCP_SERVER__PUBLIC_URL <<<"$out" ||
        fail "docker compose config without MORAINE_MCP_SERVER__PUBLIC_URL failed, but not because of it: $out"
    "${PYTHON:-python3}" - "$ROOT" "$WORK/compose-https.json" <<'PYTHON' || fail "deploy/compose.https.yml is not what docs/authorization.md describes (above)"
import json, sys, tomllib
from pathlib import Path

root, services = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())["services"]
config = tomllib.loads((root / "config/moraine-mcp.toml").read_text())
problems = []
mcp, caddy = services.get("moraine-mcp", {}), services.get("caddy")
if mcp.get("ports"):
    problems.append(f"moraine-mcp still publishes {mcp['ports']}: only Caddy may be reachable from outside")
env = mcp.get("environment", {})
if env.get("MORAINE_MCP_SERVER__PUBLIC_URL") != "https://moraine.example.com":
    problems.append("moraine-mcp does not get MORAINE_MCP_SERVER__PUBLIC_URL")
if env.get("MORAINE_MCP_AUTH__OAUTH__ISSUER") != "https://idp.example.com/realms/check":
    problems.append("moraine-mcp does not get MORAINE_MCP_AUTH__OAUTH__ISSUER")
for key, value in env.items():
    if not key.startswith("MORAINE_MCP_") or "__" not in key:
        continue
    node = config
    for part in key[len("MORAINE_MCP_"):].lower().split("__"):
        node = node.get(part) if isinstance(node, dict) else None
    if node is None or isinstance(node, dict):
        problems.append(f"moraine-mcp: {key} names no setting of config/moraine-mcp.toml")
    elif not isinstance(node, str):
        try:
            tomllib.loads(f"v = {value}")
        except tomllib.TOMLDecodeError as e:
            problems.append(f"moraine-mcp: {key}={value!r} is not a TOML value as moraine-mcp reads it: {e}")
if not caddy:
    problems.append("no caddy service")
else:
    image = caddy.get("image", "")
    if ":" not in image or image.endswith(":latest"):
        problems.append(f"caddy: image {image!r} is not pinned to a tag")
    if not any(str(p.get("target")) == "443" and str(p.get("published")) == "443" for p in caddy.get("ports", [])):
        problems.append("caddy does not publish port 443")
    mounts = {v.get("target"): v.get("source", "") for v in caddy.get("volumes", [])}
    if not mounts.get("/etc/caddy/Caddyfile", "").endswith("deploy/caddy/Caddyfile"):
        problems.append("caddy does not mount deploy/caddy/Caddyfile at /etc/caddy/Caddyfile")
    if not {"/data", "/config"} <= set(mounts):
        problems.append("caddy must keep /data and /config (certificates, ACME account) in volumes")
caddyfile = (root / "deploy/caddy/Caddyfile").read_text()
if "reverse_proxy moraine-mcp:8080" not in caddyfile:
    problems.append("deploy/caddy/Caddyfile does not proxy to moraine-mcp:8080")
if "{$MORAINE_MCP_SERVER__PUBLIC_URL}" not in caddyfile:
    problems.append("deploy/caddy/Caddyfile's site address is not {$MORAINE_MCP_SERVER__PUBLIC_URL}")
for p in problems:
    print("problem:", p)
sys.exit(1 if problems else 0)
PYTHON
    echo "ok: config valid; MORAINE_MCP_SERVER__PUBLIC_URL required; Caddy on 443, moraine-mcp unpublished"
}

# deploy/systemd/moraine-mcp.service: the system service docs/team.md installs.
check_systemd() {
    step "deploy/systemd/moraine-mcp.service: the keys it needs, its settings and options"
    local unit=deploy/systemd/moraine-mcp.service
    [ -f "$unit" ] || fail "$unit is missing"
    # A built binary's `up --help` names the options ExecStart may use (any build will do).
    local binary="" help="$WORK/up-help.txt"
    rm -f "$help"
    for candidate in target/debug/moraine-mcp target/release/moraine-mcp; do
        if [ -x "$candidate" ] && "$candidate" up --help >"$help" 2>/dev/null; then
            binary=$candidate
            break
        fi
    done
    [ -n "$binary" ] || warn "no built moraine-mcp under target/: the unit's \`up\` options are not checked against \`up --help\`"
    "${PYTHON:-python3}" - "$ROOT" "$unit" "$help" <<'PYTHON' || fail "the systemd unit is not what docs/team.md describes (above)"
import re, shlex, sys, tomllib
from pathlib import Path

root, unit_path, help_path = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
problems = []

# systemd's unit syntax: [Section] headers, Key=Value lines (a key may repeat), # or ; comments.
sections, section = {}, None
for number, raw in enumerate((root / unit_path).read_text().splitlines(), 1):
    line = raw.strip()
    if not line or line[0] in "#;":
        continue
    if line.startswith("[") and line.endswith("]"):
        section = sections.setdefault(line[1:-1], {})
        continue
    if section is None or "=" not in line:
        problems.append(f"line {number}: not a Key=Value line inside a section: {raw!r}")
        continue
    key, value = (part.strip() for part in line.split("=", 1))
    section.setdefault(key, []).append(value)

def values(name, key):
    return sections.get(name, {}).get(key, [])

def one(name, key):
    found = values(name, key)
    if len(found) != 1:
        problems.append(f"[{name}] {key}: expected one value, found {found}")
        return ""
    return found[0]

for name in ("Unit", "Service", "Install"):
    if name not in sections:
        problems.append(f"no [{name}] section")

expected = {
    "User": "moraine",
    "StateDirectory": "moraine-mcp",
    "EnvironmentFile": "/etc/moraine-mcp/env",
    "Restart": "on-failure",
    "KillMode": "mixed",
    "NoNewPrivileges": "true",
    "ProtectSystem": "strict",
    "ProtectHome": "true",
    "PrivateTmp": "true",
}
for key, want in expected.items():
    got = one("Service", key)
    if got and got != want:
        problems.append(f"[Service] {key}={got}, expected {want}")
if "multi-user.target" not in values("Install", "WantedBy"):
    problems.append("[Install] WantedBy must include multi-user.target")

# Environment=: every MORAINE_MCP_ variable is a setting of config/moraine-mcp.toml.
config = tomllib.loads((root / "config/moraine-mcp.toml").read_text())
environment = {}
for value in values("Service", "Environment"):
    for assignment in shlex.split(value):
        name, _, setting = assignment.partition("=")
        environment[name] = setting
for name in environment:
    if not name.startswith("MORAINE_MCP_"):
        continue
    path = [part.lower() for part in name[len("MORAINE_MCP_"):].split("__")]
    node = config
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    if len(path) < 2 or node is None or isinstance(node, dict):
        problems.append(f"Environment={name}: no such setting in config/moraine-mcp.toml")
if environment.get("MORAINE_MCP_EMBEDDED__DATA_DIR") != "/var/lib/moraine-mcp":
    problems.append("Environment=MORAINE_MCP_EMBEDDED__DATA_DIR must be /var/lib/moraine-mcp (the state directory)")

# ExecStart: `up --no-ingest` on loopback.
argv = shlex.split(one("Service", "ExecStart"))
if argv[:2] != ["/usr/local/bin/moraine-mcp", "up"]:
    problems.append(f"ExecStart must run /usr/local/bin/moraine-mcp up, not {argv[:2]}")
if "--no-ingest" not in argv:
    problems.append("ExecStart: a team server runs `up --no-ingest`")
listen = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--listen"), None)
if not listen or not re.fullmatch(r"127\.0\.0\.1:\d+", listen):
    problems.append(f"ExecStart: --listen must be a loopback address behind the proxy, not {listen!r}")
options = [a.split("=", 1)[0] for a in argv[2:] if a.startswith("--")]
if help_path.exists():
    help_text = help_path.read_text()
    for option in options:
        if not re.search(rf"(^|\s){re.escape(option)}\b", help_text):
            problems.append(f"ExecStart: `moraine-mcp up` has no option {option}")

# A graceful stop: moraine-mcp gets SIGTERM alone, and time for in-flight requests and its engine.
stop = one("Service", "TimeoutStopSec")
grace = config["server"]["shutdown_grace_secs"]
if stop and not (stop.isdigit() and int(stop) >= grace + 30):
    problems.append(f"TimeoutStopSec={stop}: needs whole seconds, at least server.shutdown_grace_secs ({grace}) + 30")

for p in problems:
    print("problem:", p)
sys.exit(1 if problems else 0)
PYTHON
    if command -v systemd-analyze >/dev/null; then
        # verify wants ExecStart's program to exist: a copy runs an executable that does.
        local copy=$WORK/systemd
        rm -rf "$copy" && mkdir -p "$copy"
        sed "s#^ExecStart=/usr/local/bin/moraine-mcp#ExecStart=$(command -v true)#" "$unit" >"$copy/moraine-mcp.service"
        local out
        out=$(systemd-analyze verify --man=no "$copy/moraine-mcp.service" 2>&1) ||
            fail "systemd-analyze verify rejected $unit: $out"
        # It reports unknown keys and bad values without failing: any word about the unit is one.
        if grep -F "moraine-mcp.service" <<<"$out"; then
            fail "systemd-analyze verify found problems in $unit (above)"
        fi
        echo "ok: the unit has every key docs/team.md relies on; systemd-analyze verify is clean"
    else
        warn "systemd-analyze not found: $unit checked by its keys only"
        echo "ok: the unit has every key docs/team.md relies on"
    fi
}

# ------------------------------------------------------------------------------------------
# 2. openapi/openapi.yaml
# ------------------------------------------------------------------------------------------

check_openapi() {
    step "openapi/openapi.yaml: redocly lint (recommended-strict)"
    REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_COLOR=1 \
        "$REDOCLY" lint --extends=recommended-strict --format=summary openapi/openapi.yaml >"$WORK/redocly.log" 2>&1 || {
        REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_COLOR=1 \
            "$REDOCLY" lint --extends=recommended-strict openapi/openapi.yaml 2>&1 | grep -v '^\s*[║╔╚]' >&2 || true
        fail "redocly lint found problems in openapi/openapi.yaml (above)"
    }
    echo "ok: no problems"
}

# ------------------------------------------------------------------------------------------
# 3 and 4. Python checks of compose settings, OpenAPI routes, Prometheus and Grafana files
# ------------------------------------------------------------------------------------------

check_python() {
    step "compose settings, Dockerfile, OpenAPI routes, Prometheus rules, Grafana dashboard (Python)"
    "$VENV/bin/python" - "$ROOT" "$WORK/compose.json" <<'PYTHON' || fail "the checks above failed"
import json, re, sys, tomllib
from pathlib import Path

import promql_parser
import yaml

root, compose_json = Path(sys.argv[1]), Path(sys.argv[2])
problems = []


def problem(where, message):
    problems.append(f"{where}: {message}")


def done(message, since):
    """Prints the section's verdict: ok, or how many problems it found (listed at the end)."""
    found = len(problems) - since
    print(f"ok: {message}" if not found else f"FAILED ({found} problem(s), listed below): {message}")


def norm(path):
    """A context-relative path without ./ prefixes or trailing slashes ('' for the root)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    return "/".join(parts)


def load_yaml(rel):
    try:
        return yaml.safe_load((root / rel).read_text())
    except Exception as e:  # noqa: BLE001
        problem(rel, f"not valid YAML: {e}")
        return None


# ---- What the service exposes, read from its source
metrics_rs = (root / "src/metrics.rs").read_text()
histograms = set(re.findall(r'histogram\(\s*"([a-z0-9_]+)"', metrics_rs))
counters = set(re.findall(r'counter\(\s*"([a-z0-9_]+)"', metrics_rs))
gauges = set(re.findall(r'(?:IntGauge::new|Gauge::new|gauge)\(\s*"([a-z0-9_]+)"', metrics_rs))
counters |= set(re.findall(r'IntCounter::new\(\s*"([a-z0-9_]+)"', metrics_rs))
gauges |= set(re.findall(r'Opts::new\(\s*"([a-z0-9_]+)"', metrics_rs))
if not histograms or not counters or not gauges:
    problem("src/metrics.rs", "could not find the metric definitions (histogram(\"..\"), counter(\"..\"), "
            "IntGauge::new(\"..\"), Opts::new(\"..\")); update tests/deploy/check.sh")
prefix = "moraine_mcp_"
known_metrics = {"up", "ALERTS", "ALERTS_FOR_STATE"}
for h in histograms:
    known_metrics |= {prefix + h + s for s in ("_bucket", "_sum", "_count")}
known_metrics |= {prefix + c for c in counters | gauges}

edges = set()
for const in ("FINE_EDGES_SECONDS", "SPEC_TARGETS_SECONDS", "TAIL_EDGES_SECONDS"):
    m = re.search(const + r"\s*:\s*\[f64;\s*\d+\]\s*=\s*\[([^\]]*)\]", metrics_rs)
    if not m:
        problem("src/metrics.rs", f"could not find {const}; update tests/deploy/check.sh")
        continue
    edges |= {round(float(x), 6) for x in m.group(1).replace("\n", " ").split(",") if x.strip()}
config = tomllib.loads((root / "config/moraine-mcp.toml").read_text())
edges |= {round(ms / 1000, 6) for ms in config["sla"].values()}

server_rs = (root / "src/server.rs").read_text()
server_rs += "".join(p.read_text() for p in sorted((root / "src/server").glob("*.rs")))
routes = set(re.findall(r'\.route\(\s*"([^"]+)"', server_rs)) | {config["server"]["mcp_path"]}
# Routes named by a constant (`const STATUS_PATH: &str = "/ingest/v1/status";`).
path_consts = dict(re.findall(r'const ([A-Z_]+): &str = "([^"]+)";', server_rs))
for name in re.findall(r'\.route\(\s*([A-Z_]+)\s*,', server_rs):
    if name in path_consts:
        routes.add(path_consts[name])
    else:
        problem("src/server", f".route({name}, …): no `const {name}: &str` found; update tests/deploy/check.sh")
# The OAuth protected-resource metadata (src/auth/metadata.rs): at the root, and at the path
# form for the MCP endpoint.
metadata_rs = (root / "src/auth/metadata.rs").read_text()
well_known = re.search(r'let root = "([^"]+)"', metadata_rs)
if not well_known:
    problem("src/auth/metadata.rs", "could not find the metadata path (let root = \"...\"); update tests/deploy/check.sh")
else:
    routes |= {well_known.group(1), well_known.group(1) + config["server"]["mcp_path"]}


def walk_selectors(expr, where):
    """Parses one PromQL expression; checks metric names and le matchers."""
    try:
        ast = promql_parser.parse(expr)
    except Exception as e:  # noqa: BLE001
        problem(where, f"PromQL does not parse ({e}): {expr}")
        return
    selectors = []
    promql_parser.walk(ast, lambda n: selectors.append(n) if isinstance(n, promql_parser.VectorSelector) else None)
    for sel in selectors:
        if sel.name and sel.name not in known_metrics:
            problem(where, f"unknown metric {sel.name} (not defined in src/metrics.rs)")
        for m in sel.matchers.matchers:
            if m.name == "le" and str(m.op).endswith("Equal") and "Not" not in str(m.op):
                try:
                    value = float(m.value)
                except ValueError:
                    value = None
                if value is None or round(value, 6) not in edges:
                    problem(where, f'le="{m.value}" is not a bucket edge of the latency histograms')
                elif "." not in m.value:
                    problem(where, f'le="{m.value}": Prometheus 3 stores integer edges as "{m.value}.0"; '
                            f'use an edge with a fraction or le=~"{m.value}(\\\\.0)?"')


# ---- 1. Compose settings moraine-mcp itself parses
since = len(problems)
compose = json.loads(compose_json.read_text())
services = compose.get("services", {})
for name in ("clickhouse", "migrate", "moraine-mcp", "prometheus", "ingest", "grafana"):
    if name not in services:
        problem("docker-compose.yml", f"service {name} is missing")
for name, svc in services.items():
    image = svc.get("image", "")
    if ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest"):
        problem("docker-compose.yml", f"service {name}: image {image!r} is not pinned to a tag")
    for port in svc.get("ports", []):
        if port.get("host_ip") != "127.0.0.1":
            problem("docker-compose.yml", f"service {name}: port {port.get('target')} is published on "
                    f"{port.get('host_ip') or 'every interface'} by default, not 127.0.0.1")
for name, svc in services.items():
    for key, value in (svc.get("environment") or {}).items():
        if not key.startswith("MORAINE_MCP_") or "__" not in key:
            continue
        section, setting = key[len("MORAINE_MCP_"):].lower().split("__", 1)
        if section not in config or setting not in config[section]:
            problem("docker-compose.yml", f"service {name}: {key} names no setting of config/moraine-mcp.toml")
            continue
        if not isinstance(config[section][setting], str):
            try:
                tomllib.loads(f"v = {value}")
            except tomllib.TOMLDecodeError as e:
                problem("docker-compose.yml", f"service {name}: {key} is not a TOML value as moraine-mcp reads it: {e}")
mcp = services.get("moraine-mcp", {})
env = mcp.get("environment", {})
try:
    # Tokens come from auth.tokens or from the token variables every command reads
    # (MORAINE_MCP_TOKEN, a read token; MORAINE_MCP_TEAM_TOKENS, inline tables).
    tokens = tomllib.loads("v = " + env.get("MORAINE_MCP_AUTH__TOKENS", "[]"))["v"]
    if env.get("MORAINE_MCP_TOKEN", "").strip():
        tokens.append({"name": "agents", "token": env["MORAINE_MCP_TOKEN"].strip()})
    team = env.get("MORAINE_MCP_TEAM_TOKENS", "").strip()
    if team:
        tokens += tomllib.loads("v = " + (team if team.startswith("[") else f"[{team}]"))["v"]
    if not tokens or any(len(t.get("token", "").strip()) < 16 or not t.get("name") for t in tokens):
        problem("docker-compose.yml", "moraine-mcp needs a token (MORAINE_MCP_TOKEN or auth.tokens) "
                "with a name and 16+ characters")
    hosts = tomllib.loads("v = " + env.get("MORAINE_MCP_SERVER__ALLOWED_HOSTS", "[]"))["v"]
    if "moraine-mcp" not in hosts:
        problem("docker-compose.yml", "server.allowed_hosts must include the service name moraine-mcp")
except tomllib.TOMLDecodeError:
    pass  # reported above
deps = mcp.get("depends_on", {})
if deps.get("clickhouse", {}).get("condition") != "service_healthy" or \
        deps.get("migrate", {}).get("condition") != "service_completed_successfully":
    problem("docker-compose.yml", "moraine-mcp must wait for a healthy clickhouse and a completed migrate")
for name in ("migrate", "ingest"):
    listen = services.get(name, {}).get("environment", {}).get("MORAINE_MCP_SERVER__LISTEN", "")
    if not listen.startswith("127.0.0.1:"):
        problem("docker-compose.yml", f"{name} has no auth tokens, so it must set a loopback "
                "MORAINE_MCP_SERVER__LISTEN (the image listens on 0.0.0.0)")
done("compose settings", since)

# ---- 1b. Dockerfile: what the build needs is copied and not excluded by .dockerignore
def dockerfile_instructions(text):
    joined, current = [], ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        joined.append(current.strip())
        current = ""
    return [(i.split(None, 1)[0].upper(), i.split(None, 1)[1] if " " in i else "") for i in joined]


def ignore_regex(pattern):
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(.*/)?"; i += 3
        elif pattern.startswith("**", i):
            out += ".*"; i += 2
        elif pattern[i] == "*":
            out += "[^/]*"; i += 1
        elif pattern[i] == "?":
            out += "[^/]"; i += 1
        else:
            out += re.escape(pattern[i]); i += 1
    return re.compile(out + "$")


ignore_rules = []
for line in (root / ".dockerignore").read_text().splitlines() if (root / ".dockerignore").exists() else []:
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    negate = line.startswith("!")
    ignore_rules.append((negate, ignore_regex(line.lstrip("!").strip("/"))))


def ignored(path):
    parts = path.strip("/").split("/")
    verdict = False
    for negate, rx in ignore_rules:
        if any(rx.match("/".join(parts[:n])) for n in range(1, len(parts) + 1)):
            verdict = not negate
    return verdict


since = len(problems)
dockerfile = dockerfile_instructions((root / "Dockerfile").read_text())
copied = []  # (source, destination) of COPY instructions of the build context, in the first stage
stages = 0
for op, args in dockerfile:
    if op == "FROM":
        stages += 1
        image = args.split()[0]
        if image != "scratch" and (":" not in image.rsplit("/", 1)[-1] and "@" not in image or image.endswith(":latest")):
            problem("Dockerfile", f"base image {image} is not pinned to a tag or digest")
    if op == "COPY" and "--from" not in args:
        words = [w for w in args.split() if not w.startswith("--")]
        sources, dest = words[:-1], words[-1]
        for src in sources:
            if not (root / src).exists():
                problem("Dockerfile", f"COPY {src}: no such file or directory in the repository")
            elif ignored(norm(src)):
                problem(".dockerignore", f"excludes {src}, which the Dockerfile copies")
            if stages == 1:
                # Into a directory (trailing slash or several sources), a file keeps its name.
                into_dir = dest.endswith("/") or len(sources) > 1
                target = norm(dest + "/" + src.rstrip("/").rsplit("/", 1)[-1]) if into_dir and (root / src).is_file() else norm(dest)
                copied.append((norm(src), target))
    if op == "USER" and args.split(":")[0] in ("root", "0"):
        problem("Dockerfile", "the image runs as root")
if not any(op == "USER" for op, _ in dockerfile):
    problem("Dockerfile", "no USER: the image would run as root")
if not any(op == "HEALTHCHECK" and "healthcheck" in args for op, args in dockerfile):
    problem("Dockerfile", "no HEALTHCHECK running `moraine-mcp healthcheck`")
needed = {"Cargo.toml", "Cargo.lock", "src"}
manifest = tomllib.loads((root / "Cargo.toml").read_text())
for kind in ("bin", "test", "bench", "example"):
    for target in manifest.get(kind, []):
        # The Dockerfile builds dependencies against placeholder src/main.rs and src/lib.rs, and
        # the context holds neither tests/ nor benches/: declared targets need both updated.
        problem("Cargo.toml", f"[[{kind}]] {target.get('name')!r} is declared: update the Dockerfile's "
                "placeholder build and COPY lines (and .dockerignore), then this check")
for rs in (root / "src").rglob("*.rs"):
    for literal in re.findall(r'include_(?:str|bytes)!\(\s*(?:concat!\(\s*)?"([^"]+)"', rs.read_text()):
        path = (rs.parent / literal).resolve()
        try:
            needed.add(str(path.relative_to(root.resolve())).rstrip("/"))
        except ValueError:
            problem(str(rs.relative_to(root)), f"include of {literal} lies outside the repository")
for path in sorted(needed):
    if not any((path == src or path.startswith(src + "/")) and src == dst for src, dst in copied):
        problem("Dockerfile", f"the build stage does not COPY {path} (compiled into the binary) to the same relative path")
    if ignored(path):
        problem(".dockerignore", f"excludes {path}, which the build needs")
done(f"Dockerfile copies everything the build includes ({', '.join(sorted(needed))})", since)

# ---- 2. OpenAPI paths are exactly the served routes
since = len(problems)
spec = load_yaml("openapi/openapi.yaml") or {}
if set(spec.get("paths", {})) != routes:
    problem("openapi/openapi.yaml", f"paths {sorted(spec.get('paths', {}))} differ from the routes "
            f"served according to src/server.rs, src/server/ and server.mcp_path: {sorted(routes)}")
if spec.get("info", {}).get("version") != re.search(r'^version\s*=\s*"([^"]+)"', (root / "Cargo.toml").read_text(), re.M).group(1):
    problem("openapi/openapi.yaml", "info.version differs from the version in Cargo.toml")
done("OpenAPI paths match the routes", since)

# ---- 3. Prometheus
since = len(problems)
prom = load_yaml("deploy/prometheus/prometheus.yml") or {}
rule_files = prom.get("rule_files") or []
if not rule_files:
    problem("deploy/prometheus/prometheus.yml", "no rule_files")
for f in rule_files:
    if not (root / "deploy/prometheus" / f).is_file():
        problem("deploy/prometheus/prometheus.yml", f"rule file {f} does not exist next to it")
jobs = {j.get("job_name"): j for j in prom.get("scrape_configs") or []}
job = jobs.get("moraine-mcp")
if not job:
    problem("deploy/prometheus/prometheus.yml", "no scrape job named moraine-mcp (the alerts select job=\"moraine-mcp\")")
else:
    targets = [t for sc in job.get("static_configs", []) for t in sc.get("targets", [])]
    if "moraine-mcp:8080" not in targets:
        problem("deploy/prometheus/prometheus.yml", "job moraine-mcp does not scrape moraine-mcp:8080 (the compose service)")
    if job.get("metrics_path", "/metrics") != "/metrics":
        problem("deploy/prometheus/prometheus.yml", "job moraine-mcp must scrape /metrics")

alerts = load_yaml("deploy/prometheus/alerts.yml") or {}
names = set()
duration = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")
count = 0
for group in alerts.get("groups") or []:
    for rule in group.get("rules") or []:
        where = f"alerts.yml {rule.get('alert') or rule.get('record')}"
        count += 1
        if "alert" not in rule:
            continue
        if rule["alert"] in names:
            problem(where, "alert name used twice")
        names.add(rule["alert"])
        if not isinstance(rule.get("expr"), str):
            problem(where, "no expr")
            continue
        walk_selectors(rule["expr"], where)
        if "for" in rule and not duration.match(str(rule["for"])):
            problem(where, f"bad for duration {rule['for']!r}")
        if rule.get("labels", {}).get("severity") not in ("critical", "warning", "info"):
            problem(where, "labels.severity must be critical, warning or info")
        for key in ("summary", "description"):
            if not rule.get("annotations", {}).get(key):
                problem(where, f"annotations.{key} is missing")
if count == 0:
    problem("deploy/prometheus/alerts.yml", "no rules")
done(f"{count} alerting rules", since)

# ---- 4. Grafana
since = len(problems)
try:
    dash = json.loads((root / "deploy/grafana/dashboard.json").read_text())
except Exception as e:  # noqa: BLE001
    problem("deploy/grafana/dashboard.json", f"not valid JSON: {e}")
    dash = {}
if dash:
    for key in ("uid", "title", "panels", "schemaVersion"):
        if key not in dash:
            problem("dashboard.json", f"no {key}")
    variables = {v.get("name") for v in dash.get("templating", {}).get("list", [])}
    if "datasource" not in variables:
        problem("dashboard.json", "no datasource template variable")
    ids, occupied, exprs = set(), {}, 0
    for panel in dash.get("panels", []):
        title = panel.get("title", "?")
        where = f"dashboard.json panel {title!r}"
        if panel.get("id") in ids:
            problem(where, f"panel id {panel.get('id')} used twice")
        ids.add(panel.get("id"))
        g = panel.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] + g["w"] > 24 or g["w"] < 1 or g["h"] < 1:
            problem(where, f"bad gridPos {g}")
        else:
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    if (x, y) in occupied:
                        problem(where, f"overlaps panel {occupied[(x, y)]!r}")
                        break
                    occupied[(x, y)] = title
                else:
                    continue
                break
        if panel.get("type") == "row":
            continue
        refs = set()
        for t in panel.get("targets", []):
            if t.get("refId") in refs:
                problem(where, f"refId {t.get('refId')} used twice")
            refs.add(t.get("refId"))
            if (t.get("datasource") or panel.get("datasource") or {}).get("uid") != "${datasource}":
                problem(where, "targets must use the ${datasource} variable")
            expr = t.get("expr", "")
            for var, value in (("$__rate_interval", "1m"), ("$__interval", "1m"), ("$__range", "1h"), ("$instance", ".*")):
                expr = expr.replace(var, value)
            if "$" in expr:
                problem(where, f"unknown variable in {t.get('expr')}")
            walk_selectors(expr, where)
            exprs += 1
        if not panel.get("targets"):
            problem(where, "no queries")
    done(f"dashboard with {len(dash.get('panels', []))} panels and {exprs} queries", since)
since = len(problems)

ds = load_yaml("deploy/grafana/provisioning/datasources/prometheus.yml") or {}
urls = [d.get("url") for d in ds.get("datasources") or [] if d.get("type") == "prometheus"]
if "http://prometheus:9090" not in urls:
    problem("grafana provisioning", "no Prometheus data source at http://prometheus:9090 (the compose service)")
prov = load_yaml("deploy/grafana/provisioning/dashboards/moraine-mcp.yml") or {}
paths = [p.get("options", {}).get("path") for p in prov.get("providers") or []]
mounts = [v.get("target", "") for v in services.get("grafana", {}).get("volumes", [])]
if not any(m.startswith(p + "/") for p in paths if p for m in mounts):
    problem("grafana provisioning", f"dashboard provider paths {paths} do not hold the dashboard mounted at {mounts}")
done("Grafana provisioning", since)

if problems:
    print("\n".join(["", "problems:"] + ["  " + p for p in problems]), file=sys.stderr)
    sys.exit(1)
PYTHON
}

# ------------------------------------------------------------------------------------------
# Prometheus: promtool
# ------------------------------------------------------------------------------------------

check_promtool() {
    step "deploy/prometheus: promtool check config, check rules, rule unit tests"
    if [ -z "$PROMTOOL" ]; then
        warn "promtool is not available (not on PATH, and not fetchable from Debian here): skipped"
        return 0
    fi
    "$PROMTOOL" check config deploy/prometheus/prometheus.yml >"$WORK/promtool.log" 2>&1 ||
        { cat "$WORK/promtool.log" >&2; fail "promtool check config deploy/prometheus/prometheus.yml"; }
    "$PROMTOOL" check rules deploy/prometheus/alerts.yml >"$WORK/promtool.log" 2>&1 ||
        { cat "$WORK/promtool.log" >&2; fail "promtool check rules deploy/prometheus/alerts.yml"; }
    write_rule_tests "$WORK/alerts.test.yml"
    "$PROMTOOL" test rules "$WORK/alerts.test.yml" >"$WORK/promtool.log" 2>&1 ||
        { cat "$WORK/promtool.log" >&2; fail "the alerting rules' unit tests failed (see above)"; }
    echo "ok: config and rules valid; rule unit tests pass"
}

# Unit tests for alerts.yml: in each scenario, exactly the listed alerts are firing.
write_rule_tests() {
    cat >"$1" <<EOF
rule_files: ["$ROOT/deploy/prometheus/alerts.yml"]
evaluation_interval: 1m
tests:
EOF
    cat >>"$1" <<'EOF'
  # Healthy traffic: nothing fires.
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '1+0x60'}
      - {series: 'moraine_mcp_tool_call_duration_seconds_bucket{job="moraine-mcp",instance="a",tool="search_sessions",outcome="ok",le="0.75"}', values: '0+97x60'}
      - {series: 'moraine_mcp_tool_call_duration_seconds_count{job="moraine-mcp",instance="a",tool="search_sessions",outcome="ok"}', values: '0+100x60'}
      - {series: 'moraine_mcp_tool_call_duration_seconds_bucket{job="moraine-mcp",instance="a",tool="list_sessions",outcome="ok",le="1.2"}', values: '0+100x60'}
      - {series: 'moraine_mcp_tool_call_duration_seconds_count{job="moraine-mcp",instance="a",tool="list_sessions",outcome="ok"}', values: '0+100x60'}
      - {series: 'moraine_mcp_tool_sla_total{job="moraine-mcp",instance="a",tool="open",met="true"}', values: '0+99x60'}
      - {series: 'moraine_mcp_tool_sla_total{job="moraine-mcp",instance="a",tool="open",met="false"}', values: '0+1x60'}
      - {series: 'moraine_mcp_tool_calls_total{job="moraine-mcp",instance="a",tool="open",outcome="ok"}', values: '0+98x60'}
      - {series: 'moraine_mcp_tool_calls_total{job="moraine-mcp",instance="a",tool="open",outcome="busy"}', values: '0+1x60'}
      - {series: 'moraine_mcp_tool_calls_total{job="moraine-mcp",instance="a",tool="open",outcome="not_found"}', values: '0+1x60'}
      - {series: 'moraine_mcp_http_requests_total{job="moraine-mcp",instance="a",route="/healthz",method="GET",status="200"}', values: '0+2x60'}
      - {series: 'moraine_mcp_http_requests_total{job="moraine-mcp",instance="a",route="/mcp",method="POST",status="200"}', values: '0+100x60'}
      - {series: 'moraine_mcp_clickhouse_query_slot_waiters{job="moraine-mcp",instance="a"}', values: '0+0x60'}
    promql_expr_test:
      - {expr: 'ALERTS{alertstate="firing"}', eval_time: 45m, exp_samples: []}

  # Latency SLAs from the histogram: only 90% of calls within each tool's target.
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '1+0x30'}
      - {series: 'moraine_mcp_tool_call_duration_seconds_bucket{job="moraine-mcp",instance="a",tool="search_sessions",outcome="ok",le="0.75"}', values: '0+90x30'}
      - {series: 'moraine_mcp_tool_call_duration_seconds_count{job="moraine-mcp",instance="a",tool="search_sessions",outcome="ok"}', values: '0+100x30'}
      - {series: 'moraine_mcp_tool_call_duration_seconds_bucket{job="moraine-mcp",instance="a",tool="list_sessions",outcome="ok",le="1.2"}', values: '0+90x30'}
      - {series: 'moraine_mcp_tool_call_duration_seconds_count{job="moraine-mcp",instance="a",tool="list_sessions",outcome="ok"}', values: '0+100x30'}
      - {series: 'moraine_mcp_tool_call_duration_seconds_bucket{job="moraine-mcp",instance="a",tool="open",outcome="ok",le="1.5"}', values: '0+90x30'}
      - {series: 'moraine_mcp_tool_call_duration_seconds_count{job="moraine-mcp",instance="a",tool="open",outcome="ok"}', values: '0+100x30'}
    promql_expr_test:
      - expr: 'ALERTS{alertstate="firing"}'
        eval_time: 20m
        exp_samples:
          - {labels: 'ALERTS{alertname="MoraineMcpSearchLatencySlaMiss",alertstate="firing",severity="warning",tool="search_sessions"}', value: 1}
          - {labels: 'ALERTS{alertname="MoraineMcpListLatencySlaMiss",alertstate="firing",severity="warning",tool="list_sessions"}', value: 1}
          - {labels: 'ALERTS{alertname="MoraineMcpOpenLatencySlaMiss",alertstate="firing",severity="warning",tool="open"}', value: 1}

  # Too few calls to judge: no latency alert.
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '1+0x30'}
      - {series: 'moraine_mcp_tool_call_duration_seconds_bucket{job="moraine-mcp",instance="a",tool="search_sessions",outcome="ok",le="0.75"}', values: '0+0x30'}
      - {series: 'moraine_mcp_tool_call_duration_seconds_count{job="moraine-mcp",instance="a",tool="search_sessions",outcome="ok"}', values: '0+1x30'}
    promql_expr_test:
      - {expr: 'ALERTS{alertstate="firing"}', eval_time: 25m, exp_samples: []}

  # Per-call SLA (performance.met_sla): 10% of open calls miss their own target.
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '1+0x40'}
      - {series: 'moraine_mcp_tool_sla_total{job="moraine-mcp",instance="a",tool="open",met="true"}', values: '0+90x40'}
      - {series: 'moraine_mcp_tool_sla_total{job="moraine-mcp",instance="a",tool="open",met="false"}', values: '0+10x40'}
    promql_expr_test:
      - expr: 'ALERTS{alertstate="firing"}'
        eval_time: 25m
        exp_samples:
          - {labels: 'ALERTS{alertname="MoraineMcpToolSlaMisses",alertstate="firing",severity="warning",tool="open"}', value: 1}

  # Errors by outcome: 10% busy on search; 90% backend_failure on list; one internal_error on open.
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '1+0x30'}
      - {series: 'moraine_mcp_tool_calls_total{job="moraine-mcp",instance="a",tool="search_sessions",outcome="ok"}', values: '0+90x30'}
      - {series: 'moraine_mcp_tool_calls_total{job="moraine-mcp",instance="a",tool="search_sessions",outcome="busy"}', values: '0+10x30'}
      - {series: 'moraine_mcp_tool_calls_total{job="moraine-mcp",instance="a",tool="list_sessions",outcome="ok"}', values: '0+10x30'}
      - {series: 'moraine_mcp_tool_calls_total{job="moraine-mcp",instance="a",tool="list_sessions",outcome="backend_failure"}', values: '0+90x30'}
      - {series: 'moraine_mcp_tool_calls_total{job="moraine-mcp",instance="a",tool="open",outcome="ok"}', values: '0+100x30'}
      - {series: 'moraine_mcp_tool_calls_total{job="moraine-mcp",instance="a",tool="open",outcome="internal_error"}', values: '0x15 1x15'}
    promql_expr_test:
      - expr: 'ALERTS{alertstate="firing"}'
        eval_time: 20m
        exp_samples:
          - {labels: 'ALERTS{alertname="MoraineMcpToolErrorRate",alertstate="firing",severity="warning",tool="search_sessions",outcome="busy"}', value: 1}
          - {labels: 'ALERTS{alertname="MoraineMcpToolErrorRate",alertstate="firing",severity="warning",tool="list_sessions",outcome="backend_failure"}', value: 1}
          - {labels: 'ALERTS{alertname="MoraineMcpToolFailing",alertstate="firing",severity="critical",tool="list_sessions"}', value: 1}
          - {labels: 'ALERTS{alertname="MoraineMcpInternalError",alertstate="firing",severity="warning",tool="open"}', value: 1}

  # Client mistakes: 40% invalid_id.
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '1+0x60'}
      - {series: 'moraine_mcp_tool_calls_total{job="moraine-mcp",instance="a",tool="open",outcome="ok"}', values: '0+6x60'}
      - {series: 'moraine_mcp_tool_calls_total{job="moraine-mcp",instance="a",tool="open",outcome="invalid_id"}', values: '0+4x60'}
    promql_expr_test:
      - expr: 'ALERTS{alertstate="firing"}'
        eval_time: 40m
        exp_samples:
          - {labels: 'ALERTS{alertname="MoraineMcpClientErrorRate",alertstate="firing",severity="info",tool="open"}', value: 1}

  # HTTP: 10% of /mcp requests time out (503); authentication failures; dropped log rows.
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '1+0x30'}
      - {series: 'moraine_mcp_http_requests_total{job="moraine-mcp",instance="a",route="/mcp",method="POST",status="200"}', values: '0+90x30'}
      - {series: 'moraine_mcp_http_requests_total{job="moraine-mcp",instance="a",route="/mcp",method="POST",status="503"}', values: '0+10x30'}
      - {series: 'moraine_mcp_http_requests_total{job="moraine-mcp",instance="a",route="/healthz",method="GET",status="200"}', values: '0+2x30'}
      - {series: 'moraine_mcp_auth_requests_total{job="moraine-mcp",instance="a",method="static",outcome="rejected"}', values: '0+30x30'}
      - {series: 'moraine_mcp_auth_requests_total{job="moraine-mcp",instance="a",method="oauth",outcome="wrong_audience"}', values: '0+30x30'}
      - {series: 'moraine_mcp_auth_requests_total{job="moraine-mcp",instance="a",method="oauth",outcome="forbidden"}', values: '0+600x30'}
      - {series: 'moraine_mcp_auth_requests_total{job="moraine-mcp",instance="a",method="static",outcome="accepted"}', values: '0+600x30'}
      - {series: 'moraine_mcp_query_log_failures_total{job="moraine-mcp",instance="a",reason="queue_full"}', values: '0x9 5x21'}
    promql_expr_test:
      - expr: 'ALERTS{alertstate="firing"}'
        eval_time: 20m
        exp_samples:
          - {labels: 'ALERTS{alertname="MoraineMcpHttpServerErrors",alertstate="firing",severity="warning",route="/mcp"}', value: 1}
          - {labels: 'ALERTS{alertname="MoraineMcpAuthFailures",alertstate="firing",severity="warning"}', value: 1}
          - {labels: 'ALERTS{alertname="MoraineMcpQueryLogFailures",alertstate="firing",severity="info",reason="queue_full"}', value: 1}

  # Authentication: the authorization server stops answering (every OAuth token is 503), while
  # static tokens keep working and a few callers lack a scope: only the unreachable server fires.
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '1+0x30'}
      - {series: 'moraine_mcp_auth_requests_total{job="moraine-mcp",instance="a",method="oauth",outcome="accepted"}', values: '0+20x10 200+0x20'}
      - {series: 'moraine_mcp_auth_requests_total{job="moraine-mcp",instance="a",method="oauth",outcome="unavailable"}', values: '0+0x10 0+20x20'}
      - {series: 'moraine_mcp_auth_requests_total{job="moraine-mcp",instance="a",method="oauth",outcome="forbidden"}', values: '0+6x30'}
      - {series: 'moraine_mcp_auth_requests_total{job="moraine-mcp",instance="a",method="static",outcome="accepted"}', values: '0+60x30'}
      - {series: 'moraine_mcp_auth_requests_total{job="moraine-mcp",instance="a",method="none",outcome="missing"}', values: '0+1x30'}
    promql_expr_test:
      - expr: 'ALERTS{alertstate="firing"}'
        eval_time: 25m
        exp_samples:
          - {labels: 'ALERTS{alertname="MoraineMcpAuthServerUnreachable",alertstate="firing",severity="critical"}', value: 1}

  # The service is down.
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '0+0x10'}
    promql_expr_test:
      - expr: 'ALERTS{alertstate="firing"}'
        eval_time: 5m
        exp_samples:
          - {labels: 'ALERTS{alertname="MoraineMcpDown",alertstate="firing",severity="critical",job="moraine-mcp",instance="a"}', value: 1}

  # Nothing scrapes it at all.
  - interval: 1m
    input_series:
      - {series: 'up{job="other",instance="b"}', values: '1+0x20'}
    promql_expr_test:
      - expr: 'ALERTS{alertstate="firing"}'
        eval_time: 15m
        exp_samples:
          - {labels: 'ALERTS{alertname="MoraineMcpTargetMissing",alertstate="firing",severity="warning",job="moraine-mcp"}', value: 1}

  # ClickHouse unreachable: queries fail as unavailable, /healthz answers only 503, calls queue.
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '1+0x30'}
      - {series: 'moraine_mcp_clickhouse_query_errors_total{job="moraine-mcp",instance="a",query="search_score",kind="unavailable"}', values: '0+3x30'}
      - {series: 'moraine_mcp_http_requests_total{job="moraine-mcp",instance="a",route="/healthz",method="GET",status="200"}', values: '5+0x30'}
      - {series: 'moraine_mcp_http_requests_total{job="moraine-mcp",instance="a",route="/healthz",method="GET",status="503"}', values: '0+2x30'}
      - {series: 'moraine_mcp_clickhouse_query_slot_waiters{job="moraine-mcp",instance="a"}', values: '3+0x30'}
    promql_expr_test:
      - expr: 'ALERTS{alertstate="firing"}'
        eval_time: 20m
        exp_samples:
          - {labels: 'ALERTS{alertname="MoraineMcpClickHouseUnavailable",alertstate="firing",severity="critical",instance="a"}', value: 1}
          - {labels: 'ALERTS{alertname="MoraineMcpNotReady",alertstate="firing",severity="critical",instance="a"}', value: 1}
          - {labels: 'ALERTS{alertname="MoraineMcpQueriesQueueing",alertstate="firing",severity="warning",job="moraine-mcp",instance="a"}', value: 1}

  # Team memory: alice last pushed 7 hours ago, bob a minute ago; some pushes fail.
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '1+0x480'}
      - {series: 'moraine_mcp_ingest_last_push_timestamp_seconds{job="moraine-mcp",instance="a",source="alice"}', values: '0+0x480'}
      - {series: 'moraine_mcp_ingest_last_push_timestamp_seconds{job="moraine-mcp",instance="a",source="bob"}', values: '0+60x480'}
      - {series: 'moraine_mcp_ingest_requests_total{job="moraine-mcp",instance="a",outcome="ok"}', values: '0+10x480'}
      - {series: 'moraine_mcp_ingest_requests_total{job="moraine-mcp",instance="a",outcome="failed"}', values: '0+2x480'}
    promql_expr_test:
      - expr: 'ALERTS{alertstate="firing"}'
        eval_time: 7h
        exp_samples:
          - {labels: 'ALERTS{alertname="MoraineMcpSourceQuiet",alertstate="firing",severity="warning",source="alice"}', value: 1}
          - {labels: 'ALERTS{alertname="MoraineMcpIngestFailing",alertstate="firing",severity="warning"}', value: 1}

  # /healthz alternating between 503 and 200 is not "not ready".
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '1+0x30'}
      - {series: 'moraine_mcp_http_requests_total{job="moraine-mcp",instance="a",route="/healthz",method="GET",status="200"}', values: '0+1x30'}
      - {series: 'moraine_mcp_http_requests_total{job="moraine-mcp",instance="a",route="/healthz",method="GET",status="503"}', values: '0+1x30'}
    promql_expr_test:
      - {expr: 'ALERTS{alertstate="firing"}', eval_time: 20m, exp_samples: []}

  # Capacity, reported by two instances: ch1 loses 1 GiB an hour with 100 GiB of 1 TiB left;
  # ch2 has as little left but holds steady; ch3 is nearly full. Instance b stopped reading the
  # store's size after 100 minutes.
  - interval: 1m
    input_series:
      - {series: 'up{job="moraine-mcp",instance="a"}', values: '1+0x600'}
      - {series: 'up{job="moraine-mcp",instance="b"}', values: '1+0x600'}
      - {series: 'moraine_mcp_store_disk_free_bytes{job="moraine-mcp",instance="a",host="ch1",disk="default"}', values: '107374182400-17895697x600'}
      - {series: 'moraine_mcp_store_disk_free_bytes{job="moraine-mcp",instance="b",host="ch1",disk="default"}', values: '107374182400-17895697x600'}
      - {series: 'moraine_mcp_store_disk_total_bytes{job="moraine-mcp",instance="a",host="ch1",disk="default"}', values: '1099511627776+0x600'}
      - {series: 'moraine_mcp_store_disk_total_bytes{job="moraine-mcp",instance="b",host="ch1",disk="default"}', values: '1099511627776+0x600'}
      - {series: 'moraine_mcp_store_disk_free_bytes{job="moraine-mcp",instance="a",host="ch2",disk="default"}', values: '107374182400+0x600'}
      - {series: 'moraine_mcp_store_disk_total_bytes{job="moraine-mcp",instance="a",host="ch2",disk="default"}', values: '1099511627776+0x600'}
      - {series: 'moraine_mcp_store_disk_free_bytes{job="moraine-mcp",instance="a",host="ch3",disk="default"}', values: '10737418240+0x600'}
      - {series: 'moraine_mcp_store_disk_total_bytes{job="moraine-mcp",instance="a",host="ch3",disk="default"}', values: '1099511627776+0x600'}
      - {series: 'moraine_mcp_store_last_refresh_timestamp_seconds{job="moraine-mcp",instance="a"}', values: '0+60x600'}
      - {series: 'moraine_mcp_store_last_refresh_timestamp_seconds{job="moraine-mcp",instance="b"}', values: '0+60x100 6000+0x500'}
    promql_expr_test:
      - expr: 'ALERTS{alertstate="firing"}'
        eval_time: 9h
        exp_samples:
          - {labels: 'ALERTS{alertname="MoraineMcpDiskFillingUp",alertstate="firing",severity="warning",job="moraine-mcp",host="ch1",disk="default"}', value: 1}
          - {labels: 'ALERTS{alertname="MoraineMcpDiskFull",alertstate="firing",severity="critical",job="moraine-mcp",host="ch3",disk="default"}', value: 1}
          - {labels: 'ALERTS{alertname="MoraineMcpStoreSizeStale",alertstate="firing",severity="warning",job="moraine-mcp",instance="b"}', value: 1}
EOF
}

# ------------------------------------------------------------------------------------------

started=$SECONDS
step "tools"
ensure_python
ensure_redocly
ensure_compose
ensure_promtool

check_compose
check_compose_https
check_cluster_compose
check_systemd
check_openapi
check_python
check_promtool

printf '\ndeploy checks passed in %ss\n' "$((SECONDS - started))"
