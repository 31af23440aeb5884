#!/usr/bin/env node
// Drives a live moraine-mcp with the official TypeScript MCP clients.
//
//   node ts-client.mjs <mcp-url> <mode> [--session yes|no]
//
// mode: sdk1        @modelcontextprotocol/sdk (v1) Client + StreamableHTTPClientTransport (2025-11-25)
//       legacy      @modelcontextprotocol/client (v2), versionNegotiation 'legacy' (2025-11-25)
//       auto        v2 client, 'auto' (server/discover probe; this server must select 2026-07-28)
//       2026-07-28  v2 client, pinned to 2026-07-28
// --session yes|no asserts whether the server issued an Mcp-Session-Id (2025-11-25 modes only;
// the 2026-07-28 modes must never use one). MCP_TOKEN, when set, is sent as a bearer token.
//
// Checks: connect, tools/list (search_sessions, list_sessions, open with input and output
// schemas), search_sessions with hits, list_sessions, open on a returned open.event_id, open with
// a malformed id (isError + invalid_id) and an unknown tool (JSON-RPC -32602). The protocol
// version actually used is checked on the wire through a recording fetch.
// Prints one line per step; exits 1 with a message naming the failed step.

import { CheckError, check, show } from './report.mjs';

const QUERY = 'clickhouse migration';
const TOOLS = ['search_sessions', 'list_sessions', 'open'];
const WINDOW = { start_datetime: '2000-01-01T00:00:00Z', end_datetime: '2100-01-01T00:00:00Z', limit: 5 };
const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';

const [url, mode, ...rest] = process.argv.slice(2);
const MODES = ['sdk1', 'legacy', 'auto', MODERN];
if (!url || !MODES.includes(mode)) {
  console.error(`usage: ts-client.mjs <mcp-url> <${MODES.join('|')}> [--session yes|no]`);
  process.exit(2);
}
let expectSession;
if (rest[0] === '--session' && ['yes', 'no'].includes(rest[1])) expectSession = rest[1] === 'yes';
else if (rest.length) {
  console.error(`ts-client: unexpected arguments: ${rest.join(' ')}`);
  process.exit(2);
}
const token = process.env.MCP_TOKEN || '';
const label = `ts ${mode === 'sdk1' ? 'sdk v1' : `client v2 ${mode}`}`;

// AJV (used by both SDKs to validate structuredContent) warns once per unknown JSON Schema
// format; the server's outputSchemas carry schemars' "uint32"/"uint64" formats (about 60 lines per
// run). Harmless (the format is ignored, the type still checked), so keep them out of the output.
const warn = console.warn.bind(console);
console.warn = (...args) => {
  if (typeof args[0] === 'string' && /^unknown format ".*" ignored in schema/.test(args[0])) return;
  warn(...args);
};

let step = 'start';
function ok(detail) {
  console.log(`${label}: ${step}: ok${detail ? ` (${detail})` : ''}`);
}

// Every HTTP exchange the transport makes, for protocol-level assertions.
const wire = [];
async function recordingFetch(input, init = {}) {
  const headers = new Headers(init.headers);
  let body;
  try {
    body = typeof init.body === 'string' ? JSON.parse(init.body) : undefined;
  } catch {
    body = undefined;
  }
  const entry = {
    method: init.method || 'GET',
    rpc: body && body.method,
    version: headers.get('mcp-protocol-version'),
    session: headers.get('mcp-session-id'),
    auth: headers.has('authorization'),
  };
  const response = await fetch(input, init);
  entry.status = response.status;
  entry.issuedSession = response.headers.get('mcp-session-id');
  wire.push(entry);
  return response;
}

async function makeClient() {
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  const info = { name: 'moraine-interop-ts', version: '1.0.0' };
  if (mode === 'sdk1') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit, fetch: recordingFetch });
    return { client: new Client(info, { capabilities: {} }), transport };
  }
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const negotiation = mode === MODERN ? { pin: MODERN } : mode;
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit, fetch: recordingFetch });
  const client = new Client(info, { capabilities: {}, versionNegotiation: { mode: negotiation } });
  return { client, transport };
}

function structured(result, tool) {
  check(result && typeof result === 'object', `no result: ${show(result)}`);
  const sc = result.structuredContent;
  check(sc && typeof sc === 'object', `no structuredContent in ${show(result)}`);
  const text = Array.isArray(result.content) ? result.content.find((c) => c.type === 'text') : undefined;
  check(text && text.text.length > 0, `no readable text content in ${show(result)}`);
  check(sc.tool === tool, `structuredContent.tool is ${show(sc.tool)}, expected ${tool}`);
  return sc;
}

async function main() {
  const { client, transport } = await makeClient();
  const wantVersion = mode === 'sdk1' || mode === 'legacy' ? LEGACY : MODERN;

  step = 'connect';
  await client.connect(transport);
  const posts = wire.filter((w) => w.method === 'POST');
  check(posts.length > 0, 'no POST request was made');
  check(!token || wire.every((w) => w.auth), 'a request went out without the bearer token');
  const sessionId = transport.sessionId;
  if (wantVersion === MODERN) {
    check(!sessionId, `2026-07-28 mode holds a session id ${sessionId}`);
  } else if (expectSession !== undefined) {
    check(Boolean(sessionId) === expectSession,
      `expected ${expectSession ? 'an' : 'no'} Mcp-Session-Id, got ${show(sessionId)}`);
  }
  const server = client.getServerVersion();
  check(server && server.name === 'moraine-mcp', `serverInfo is ${show(server)}`);
  ok(`server ${server.name} ${server.version}${sessionId ? ', session issued' : ', no session'}`);

  step = 'tools/list';
  const listed = await client.listTools();
  const names = listed.tools.map((t) => t.name);
  for (const name of TOOLS) check(names.includes(name), `tool ${name} missing; got ${show(names)}`);
  check(names.length === TOOLS.length, `unexpected tools: ${show(names)}`);
  for (const t of listed.tools) {
    check(t.inputSchema && t.inputSchema.type === 'object', `${t.name}: bad inputSchema ${show(t.inputSchema)}`);
    check(t.outputSchema && t.outputSchema.type === 'object', `${t.name}: bad outputSchema ${show(t.outputSchema)}`);
  }
  ok(names.join(', '));

  step = 'tools/call search_sessions';
  const found = await client.callTool({ name: 'search_sessions', arguments: { query: QUERY, n_hits: 5 } });
  check(found.isError !== true, `isError is true: ${show(found)}`);
  const search = structured(found, 'search_sessions');
  check(search.schema_version === 'moraine.mcp.search_sessions.v1', `schema_version ${show(search.schema_version)}`);
  const hits = search.data && search.data.results;
  check(Array.isArray(hits) && hits.length > 0, `no hits for "${QUERY}": ${show(search)}`);
  const eventId = hits[0].open && hits[0].open.event_id;
  check(typeof eventId === 'string' && eventId.startsWith('event:'), `first hit has no open.event_id: ${show(hits[0])}`);
  ok(`${hits.length} hits, first ${eventId}`);

  step = 'tools/call list_sessions';
  const listedSessions = await client.callTool({ name: 'list_sessions', arguments: WINDOW });
  check(listedSessions.isError !== true, `isError is true: ${show(listedSessions)}`);
  const sessions = structured(listedSessions, 'list_sessions');
  check(sessions.schema_version === 'moraine.mcp.list_sessions.v1', `schema_version ${show(sessions.schema_version)}`);
  const page = sessions.data && sessions.data.sessions;
  check(Array.isArray(page) && page.length > 0, `no sessions listed: ${show(sessions)}`);
  ok(`${page.length} sessions`);

  step = 'tools/call open';
  const opened = await client.callTool({ name: 'open', arguments: { id: eventId } });
  check(opened.isError !== true, `isError is true: ${show(opened)}`);
  const open = structured(opened, 'open');
  check(open.schema_version === 'moraine.mcp.open.v1', `schema_version ${show(open.schema_version)}`);
  check(JSON.stringify(open.data).includes(eventId), `open result does not mention ${eventId}: ${show(open)}`);
  ok(`opened ${eventId}`);

  step = 'tools/call open (invalid id)';
  const bad = await client.callTool({ name: 'open', arguments: { id: 'nope' } });
  check(bad.isError === true, `expected isError true, got ${show(bad)}`);
  const err = bad.structuredContent;
  check(err && err.schema_version === 'moraine.mcp.error.v1', `error envelope missing: ${show(bad)}`);
  check(err.error && err.error.code === 'invalid_id', `error code ${show(err.error)}, expected invalid_id`);
  ok('isError, invalid_id');

  step = 'tools/call unknown tool';
  let unknown;
  try {
    unknown = await client.callTool({ name: 'no_such_tool', arguments: {} });
  } catch (e) {
    check(e.code === -32602, `expected error code -32602, got ${show(e.code)} (${e.message})`);
  }
  check(unknown === undefined, `expected a JSON-RPC error, got a result ${show(unknown)}`);
  ok('-32602');

  step = 'protocol on the wire';
  const rpcPosts = wire.filter((w) => w.method === 'POST' && w.rpc && w.rpc !== 'initialize' && w.rpc !== 'server/discover');
  const versions = [...new Set(rpcPosts.map((w) => w.version))];
  check(versions.length === 1 && versions[0] === wantVersion,
    `expected MCP-Protocol-Version ${wantVersion} on every request, saw ${show(versions)}`);
  if (wantVersion === MODERN) {
    check(!wire.some((w) => w.rpc === 'initialize'), 'an initialize request was sent in 2026-07-28 mode');
    check(!wire.some((w) => w.session || w.issuedSession), 'a session id was used in 2026-07-28 mode');
  } else if (sessionId) {
    check(rpcPosts.every((w) => w.session === sessionId), 'a request went out without the session id');
  }
  ok(`MCP-Protocol-Version ${wantVersion} on ${rpcPosts.length} requests`);

  step = 'close';
  if (sessionId && typeof transport.terminateSession === 'function') {
    await transport.terminateSession();
    const del = wire.find((w) => w.method === 'DELETE');
    check(del && [200, 202, 204, 405].includes(del.status), `DELETE answered ${show(del && del.status)}`);
  }
  await client.close();
  ok(sessionId ? 'session deleted' : '');
}

main().then(
  () => process.exit(0),
  (e) => {
    const detail = e instanceof CheckError ? e.message : `${e && e.name ? `${e.name}: ` : ''}${e && e.message ? e.message : show(e)}`;
    console.error(`FAIL ${label}: ${step}: ${detail}`);
    process.exit(1);
  },
);
