#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. formatting and lints;
#   2. unit and integration tests (the real embedded ClickHouse, MCP over real HTTP);
#   3. the deployment files (docker compose config, OpenAPI lint, Prometheus rules, dashboard);
#   4. interoperability against live servers: curl smoke test, the official TypeScript and
#      Python MCP SDK clients in both protocol styles, the MCP conformance suite, the OAuth
#      flow, and the web pages in Chromium;
#   5. the benchmark harness in its --quick form, as a smoke (numbers reported, never asserted).
# Needs the Rust toolchain, Python 3.11+, Node.js 20+ with npm, and curl; everything else is
# installed under target/ on first use, but for Debian's chromium package, which step 4 installs
# (as root, else with sudo) when `chromium` is missing. SKIP_BENCH=1 leaves out step 5 (it
# builds in release).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
started=$SECONDS
# One copy of the embedding model for every server and command the tests start (each in a
# HOME of its own would fetch its own); the in-process servers use the same directory.
export MORAINE_MCP_SEMANTIC__MODEL_DIR="$PWD/target/tmp/model"

step "cargo fmt --check"
cargo fmt --check

step "cargo clippy --all-targets --all-features -- -D warnings"
cargo clippy --all-targets --all-features --locked -- -D warnings

step "cargo test"
cargo test --all-features --locked

step "deployment files"
tests/deploy/check.sh

step "interoperability (smoke.sh, TypeScript and Python SDKs, MCP conformance)"
cargo build --locked
tests/interop/run.sh

if [ "${SKIP_BENCH:-0}" != 1 ]; then
    step "benchmark harness (--quick, smoke)"
    cargo build --release --features bench --locked
    # The engine environment the integration tests installed, rather than a second copy.
    mkdir -p target/bench-smoke
    if [ ! -e target/bench-smoke/engine-env ] && [ -d target/tmp/engine-env/venv ]; then
        ln -s ../tmp/engine-env target/bench-smoke/engine-env
    fi
    target/release/moraine-mcp bench --quick --out target/bench-smoke
fi

echo
echo "all tests passed in $((SECONDS - started)) s"
