#!/usr/bin/env python3
"""Drives a live moraine-mcp with the official Python MCP SDK (mcp 2.3.0).

    py-client.py <mcp-url> <legacy|auto|2026-07-28> [--session yes|no]

legacy      initialize handshake, 2025-11-25
auto        server/discover probe; this server must select 2026-07-28
2026-07-28  pinned, stateless, no probe
--session yes|no asserts whether the server issued an Mcp-Session-Id (legacy mode only; the
2026-07-28 modes must never use one). MCP_TOKEN, when set, is sent as a bearer token.

Checks: connect, tools/list (search_sessions, list_sessions, open with input and output schemas),
search_sessions with hits, list_sessions, open on a returned open.event_id, open with a malformed
id (isError + invalid_id) and an unknown tool (JSON-RPC -32602). The protocol version actually
used is checked on the wire through httpx event hooks. Prints one line per step; exits 1 with a
message naming the failed step.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

QUERY = "clickhouse migration"
TOOLS = ["search_sessions", "list_sessions", "open"]
WINDOW = {"start_datetime": "2000-01-01T00:00:00Z", "end_datetime": "2100-01-01T00:00:00Z", "limit": 5}
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
MODES = ["legacy", "auto", MODERN]


class CheckError(Exception):
    pass


class DeleteAccepted(logging.Filter):
    """The SDK logs a warning when DELETE answers anything but 200/204; rmcp answers 202 Accepted,
    which is a success status. The DELETE status is checked on the wire instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Session termination failed: 202" not in record.getMessage()


def check(cond: Any, message: str) -> None:
    if not cond:
        raise CheckError(message)


def show(value: Any, limit: int = 300) -> str:
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


class Run:
    def __init__(self, url: str, mode: str, expect_session: bool | None) -> None:
        self.url = url
        self.mode = mode
        self.expect_session = expect_session
        self.token = os.environ.get("MCP_TOKEN", "")
        self.label = f"py mcp {mode}"
        self.step = "start"
        self.wire: list[dict[str, Any]] = []

    def ok(self, detail: str = "") -> None:
        print(f"{self.label}: {self.step}: ok" + (f" ({detail})" if detail else ""), flush=True)

    async def _on_request(self, request: httpx2.Request) -> None:
        rpc = None
        try:
            body = json.loads(request.content) if request.content else None
            rpc = body.get("method") if isinstance(body, dict) else None
        except (ValueError, httpx2.RequestNotRead):
            pass
        self.wire.append(
            {
                "request": request,
                "method": request.method,
                "rpc": rpc,
                "version": request.headers.get("mcp-protocol-version"),
                "session": request.headers.get("mcp-session-id"),
                "auth": "authorization" in request.headers,
            }
        )

    async def _on_response(self, response: httpx2.Response) -> None:
        for entry in reversed(self.wire):
            if entry["request"] is response.request:
                entry["status"] = response.status_code
                entry["issued_session"] = response.headers.get("mcp-session-id")
                break

    def structured(self, result: Any, tool: str) -> dict[str, Any]:
        sc = result.structured_content
        check(isinstance(sc, dict), f"no structuredContent in {show(result)}")
        texts = [c for c in result.content if getattr(c, "type", None) == "text" and c.text]
        check(texts, f"no readable text content in {show(result)}")
        check(sc.get("tool") == tool, f"structuredContent.tool is {sc.get('tool')!r}, expected {tool}")
        return sc

    async def main(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        want = LEGACY if self.mode == "legacy" else MODERN
        http = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(30, read=60),
            event_hooks={"request": [self._on_request], "response": [self._on_response]},
        )
        async with http:
            transport = streamable_http_client(self.url, http_client=http)
            self.step = "connect"
            client = Client(
                transport,
                mode=self.mode,  # type: ignore[arg-type]
                read_timeout_seconds=30,
                raise_exceptions=True,
            )
            async with client:
                await self.session_checks(client, want)
            self.step = "close"
            deletes = [w for w in self.wire if w["method"] == "DELETE"]
            issued = next((w["issued_session"] for w in self.wire if w.get("issued_session")), None)
            if issued:
                check(deletes, "the session was not deleted on close")
                check(deletes[0].get("status") in (200, 202, 204, 405), f"DELETE answered {deletes[0].get('status')}")
                self.ok(f"session deleted, DELETE answered {deletes[0].get('status')}")
            else:
                check(not deletes, "a DELETE was sent without a session")
                self.ok()

    async def session_checks(self, client: Client, want: str) -> None:
        check(client.protocol_version == want, f"negotiated {client.protocol_version!r}, expected {want}")
        issued = next((w["issued_session"] for w in self.wire if w.get("issued_session")), None)
        if want == MODERN:
            check(not issued, f"2026-07-28 mode was issued a session id {issued}")
        elif self.expect_session is not None:
            check(bool(issued) == self.expect_session, f"expected {'an' if self.expect_session else 'no'} Mcp-Session-Id, got {issued!r}")
        info = client.server_info
        if self.mode == "legacy":
            check(info is not None and info.name == "moraine-mcp", f"serverInfo is {show(info)}")
        server = f"server {info.name} {info.version}, " if info else ""
        self.ok(f"{server}protocol {client.protocol_version}, {'session issued' if issued else 'no session'}")

        self.step = "tools/list"
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        check(sorted(names) == sorted(TOOLS), f"tools are {names}, expected {TOOLS}")
        for t in listed.tools:
            check(isinstance(t.input_schema, dict) and t.input_schema.get("type") == "object", f"{t.name}: bad inputSchema")
            check(isinstance(t.output_schema, dict) and t.output_schema.get("type") == "object", f"{t.name}: bad outputSchema")
        self.ok(", ".join(names))

        self.step = "tools/call search_sessions"
        found = await client.call_tool("search_sessions", {"query": QUERY, "n_hits": 5})
        check(not found.is_error, f"isError is true: {show(found)}")
        search = self.structured(found, "search_sessions")
        check(search.get("schema_version") == "moraine.mcp.search_sessions.v1", f"schema_version {search.get('schema_version')!r}")
        hits = (search.get("data") or {}).get("results")
        check(isinstance(hits, list) and hits, f'no hits for "{QUERY}": {show(search)}')
        event_id = (hits[0].get("open") or {}).get("event_id")
        check(isinstance(event_id, str) and event_id.startswith("event:"), f"first hit has no open.event_id: {show(hits[0])}")
        self.ok(f"{len(hits)} hits, first {event_id}")

        self.step = "tools/call list_sessions"
        listed_sessions = await client.call_tool("list_sessions", WINDOW)
        check(not listed_sessions.is_error, f"isError is true: {show(listed_sessions)}")
        sessions = self.structured(listed_sessions, "list_sessions")
        check(sessions.get("schema_version") == "moraine.mcp.list_sessions.v1", f"schema_version {sessions.get('schema_version')!r}")
        page = (sessions.get("data") or {}).get("sessions")
        check(isinstance(page, list) and page, f"no sessions listed: {show(sessions)}")
        self.ok(f"{len(page)} sessions")

        self.step = "tools/call open"
        opened = await client.call_tool("open", {"id": event_id})
        check(not opened.is_error, f"isError is true: {show(opened)}")
        open_ = self.structured(opened, "open")
        check(open_.get("schema_version") == "moraine.mcp.open.v1", f"schema_version {open_.get('schema_version')!r}")
        check(event_id in json.dumps(open_.get("data")), f"open result does not mention {event_id}: {show(open_)}")
        self.ok(f"opened {event_id}")

        self.step = "tools/call open (invalid id)"
        bad = await client.call_tool("open", {"id": "nope"})
        check(bad.is_error, f"expected isError true, got {show(bad)}")
        err = bad.structured_content or {}
        check(err.get("schema_version") == "moraine.mcp.error.v1", f"error envelope missing: {show(bad)}")
        check((err.get("error") or {}).get("code") == "invalid_id", f"error is {show(err.get('error'))}, expected code invalid_id")
        self.ok("isError, invalid_id")

        self.step = "tools/call unknown tool"
        try:
            result = await client.call_tool("no_such_tool", {})
        except MCPError as e:
            check(e.code == -32602, f"expected error code -32602, got {e.code} ({e.message})")
        else:
            raise CheckError(f"expected a JSON-RPC error, got a result {show(result)}")
        self.ok("-32602")

        self.step = "protocol on the wire"
        check(not self.token or all(w["auth"] for w in self.wire), "a request went out without the bearer token")
        posts = [w for w in self.wire if w["method"] == "POST" and w["rpc"] not in (None, "initialize", "server/discover")]
        versions = sorted({str(w["version"]) for w in posts})
        check(versions == [want], f"expected MCP-Protocol-Version {want} on every request, saw {versions}")
        if want == MODERN:
            check(not any(w["rpc"] == "initialize" for w in self.wire), "an initialize request was sent in 2026-07-28 mode")
            check(not any(w["session"] for w in self.wire), "a session id was sent in 2026-07-28 mode")
        elif issued:
            check(all(w["session"] == issued for w in posts), "a request went out without the session id")
        self.ok(f"MCP-Protocol-Version {want} on {len(posts)} requests")


def main() -> int:
    args = sys.argv[1:]
    if len(args) not in (2, 4) or args[1] not in MODES or (len(args) == 4 and (args[2] != "--session" or args[3] not in ("yes", "no"))):
        print(f"usage: py-client.py <mcp-url> <{'|'.join(MODES)}> [--session yes|no]", file=sys.stderr)
        return 2
    expect = None if len(args) == 2 else args[3] == "yes"
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(DeleteAccepted())
    run = Run(args[0], args[1], expect)
    try:
        asyncio.run(run.main())
    except CheckError as e:
        print(f"FAIL {run.label}: {run.step}: {e}", file=sys.stderr)
        return 1
    except BaseException as e:  # noqa: BLE001 - any SDK or transport failure is a failed step
        if isinstance(e, BaseExceptionGroup):
            leaves = list(e.exceptions)
            while leaves and isinstance(leaves[0], BaseExceptionGroup):
                leaves = list(leaves[0].exceptions)
            e = leaves[0] if leaves else e
        if isinstance(e, CheckError):
            print(f"FAIL {run.label}: {run.step}: {e}", file=sys.stderr)
        else:
            print(f"FAIL {run.label}: {run.step}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
