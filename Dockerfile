# syntax=docker/dockerfile:1
#
# moraine-mcp container image: a release build of the single binary on debian:bookworm-slim.
#
#   docker build -t moraine-mcp:local .
#   docker run --rm -p 127.0.0.1:8080:8080 \
#     -e MORAINE_MCP_CLICKHOUSE__URL=http://clickhouse:8123 \
#     -e MORAINE_MCP_CLICKHOUSE__USER=moraine -e MORAINE_MCP_CLICKHOUSE__PASSWORD=... \
#     -e MORAINE_MCP_AUTH__TOKENS='[{name = "laptop", token = "at-least-16-characters"}]' \
#     moraine-mcp:local
#
# The image listens on 0.0.0.0:8080, so the server refuses to start without auth.tokens (or
# server.allow_unauthenticated = true). ClickHouse settings come from the environment
# (MORAINE_MCP_CLICKHOUSE__*); docker-compose.yml wires everything together.

########################################################################################
# Build stage
########################################################################################
FROM rust:1.95-bookworm AS builder

WORKDIR /build

# 1. Dependencies only: the manifest, the lockfile and placeholder targets. This layer is
#    rebuilt only when Cargo.toml or Cargo.lock change, so source edits reuse the compiled
#    dependency graph.
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src \
    && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs \
    && cargo build --release --locked --bin moraine-mcp \
    && rm -rf src

# 2. The crate itself. The binary embeds sql/, config/moraine-mcp.toml, deploy/demo/ and
#    deploy/embedded/ at compile time (include_str!), so they are part of the build context.
COPY src ./src
COPY sql ./sql
COPY config ./config
COPY deploy/demo ./deploy/demo
COPY deploy/embedded ./deploy/embedded
# COPY keeps the files' own modification times, which may be older than the placeholder
# build: forget the placeholder crate explicitly so cargo cannot mistake it for up to date.
# The release profile keeps line tables for readable backtraces; compressing them (objcopy, from
# the builder's binutils) takes the binary from about 110 MB to about 40 MB, and backtraces
# still show file:line.
RUN rm -rf target/release/.fingerprint/moraine-mcp-* \
        target/release/deps/moraine_mcp-* \
        target/release/deps/libmoraine_mcp-* \
        target/release/moraine-mcp \
    && touch src/main.rs src/lib.rs \
    && cargo build --release --locked --bin moraine-mcp \
    && ./target/release/moraine-mcp --version | grep -q '^moraine-mcp ' \
    && objcopy --compress-debug-sections=zlib target/release/moraine-mcp /build/moraine-mcp

########################################################################################
# Runtime stage
########################################################################################
FROM debian:bookworm-slim AS runtime

# CA certificates for https:// ClickHouse URLs and OTLP endpoints; nothing else is needed
# (the binary links no OpenSSL).
RUN apt-get update \
    && apt-get install --yes --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# An unprivileged user with a fixed uid/gid, so bind mounts (ingest logs) can be granted to it.
RUN groupadd --system --gid 10001 moraine \
    && useradd --system --uid 10001 --gid moraine --home-dir /var/lib/moraine-mcp \
        --create-home --shell /usr/sbin/nologin moraine

COPY --from=builder /build/moraine-mcp /usr/local/bin/moraine-mcp
# The migrations are compiled into the binary; the SQL ships alongside for reference.
COPY sql/ /usr/share/moraine-mcp/sql/
COPY config/moraine-mcp.toml /etc/moraine-mcp/moraine-mcp.toml

ENV MORAINE_MCP_CONFIG=/etc/moraine-mcp/moraine-mcp.toml \
    MORAINE_MCP_SERVER__LISTEN=0.0.0.0:8080 \
    MORAINE_MCP_SEMANTIC__MODEL_DIR=/usr/share/moraine-mcp/model

# The embedding model (19 MB from PyPI, checked against its pinned SHA-256) is part of the
# image, so a container needs no access to PyPI when it starts.
RUN moraine-mcp fetch-model

LABEL org.opencontainers.image.title="moraine-mcp" \
      org.opencontainers.image.description="Session search for AI coding agents: a remote MCP server over ClickHouse" \
      org.opencontainers.image.licenses="Apache-2.0"

USER moraine:moraine
WORKDIR /var/lib/moraine-mcp
EXPOSE 8080

# `moraine-mcp healthcheck` GETs /healthz on the listen port (via 127.0.0.1) and exits 0 only
# on HTTP 200, i.e. ClickHouse answers and the schema is current. `serve` first waits up to
# clickhouse.startup_wait_secs (30 s) for ClickHouse, hence the start period.
HEALTHCHECK --interval=30s --timeout=10s --start-period=45s --retries=3 \
    CMD ["moraine-mcp", "healthcheck"]

STOPSIGNAL SIGTERM
ENTRYPOINT ["moraine-mcp"]
CMD ["serve"]
