#!/usr/bin/env node
// OAuth 2.1 end to end against a live moraine-mcp configured as a resource server of a real
// authorization server (oauth-provider.mjs, started and restarted here), the way a hosted MCP
// connector signs a person in, and the ways an attacker tries to get past it.
//
//   OAUTH_INTROSPECTION_SECRET=... node oauth-flow.mjs <mcp-url> <provider-port> <static-read-token> <metrics-token>
//
// The server must trust issuer http://127.0.0.1:<provider-port> with introspection client
// moraine-mcp (that secret), jwks_cache_secs 2, and rules: scope read -> read, scope ingest ->
// ingest, groups team-a -> read_sources ["claude"] (run.sh writes that configuration).
//
// Checks, one line each: the 401 challenge and protected resource metadata (RFC 9728); static
// tokens still work; the official TS SDK's OAuth client (discovery, dynamic registration, PKCE
// S256, resource indicator) signs alice in, searches and opens, and refreshes its token; alice
// (team-a) only ever sees claude sessions (search, list pages and cursors, open, within_id), bob
// (admins) sees all; a token without `read` gets 403 insufficient_scope; forged, expired,
// misdirected and mangled tokens get 401 invalid_token; the token is read from the
// Authorization header only; opaque tokens are introspected; signing keys rotate (new kid
// fetched, retired kid refused once the JWKS cache expires); /metrics counts OAuth outcomes and
// names nobody. Exits 1 at the first failed check, 2 on usage errors.

import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { SignJWT, decodeJwt, decodeProtectedHeader, exportSPKI, importJWK } from 'jose';
import { loginAndGetCode, startProvider } from './oauth-provider.mjs';
import { CheckError, check, show } from './report.mjs';

const [mcpArg, portArg, staticToken, metricsToken] = process.argv.slice(2);
const providerPort = Number(portArg);
const introspectionSecret = process.env.OAUTH_INTROSPECTION_SECRET || '';
if (!mcpArg || !Number.isInteger(providerPort) || providerPort <= 0 || !staticToken || !metricsToken || !introspectionSecret) {
  console.error('usage: OAUTH_INTROSPECTION_SECRET=... oauth-flow.mjs <mcp-url> <provider-port> <static-read-token> <metrics-token>');
  process.exit(2);
}
const MCP = mcpArg.replace(/\/+$/, '');
const ORIGIN = new URL(MCP).origin;
const PRM_URL = `${ORIGIN}/.well-known/oauth-protected-resource${new URL(MCP).pathname}`;
const OTHER_RESOURCE = 'http://127.0.0.1:1/other';
const REDIRECT_URI = 'http://127.0.0.1:1/callback'; // never reached: the scripted browser stops at it
const PROTOCOL = '2025-11-25';
const WINDOW = { start_datetime: '2000-01-01T00:00:00Z', end_datetime: '2100-01-01T00:00:00Z' };
const QUERIES = ['the', 'test', 'error', 'file', 'clickhouse migration'];

// oidc-provider's development-mode notices and AJV's unknown-format notices are noise here.
const warn = console.warn.bind(console);
console.warn = (...args) => {
  const first = typeof args[0] === 'string' ? args[0] : '';
  if (/^unknown format ".*" ignored in schema/.test(first) || first.startsWith('oidc-provider WARNING')) return;
  warn(...args);
};
const log = console.log.bind(console);
console.log = (...args) => {
  if (typeof args[0] === 'string' && args[0].startsWith('oidc-provider WARNING')) return;
  log(...args);
};

// --- reporting -------------------------------------------------------------------------------
let step = 'start';
let passed = 0;
function ok(detail) {
  passed += 1;
  console.log(`oauth: ${step}: ok${detail ? ` (${detail})` : ''}`);
}

// --- HTTP helpers ----------------------------------------------------------------------------

// The auth-params of a `Bearer` challenge, lower-cased names.
function challenge(header) {
  check(typeof header === 'string' && /^Bearer(\s|$)/.test(header), `WWW-Authenticate is ${show(header)}, expected a Bearer challenge`);
  const params = {};
  for (const m of header.slice(6).matchAll(/([A-Za-z_][\w-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/g)) {
    params[m[1].toLowerCase()] = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3];
  }
  return params;
}

// The JSON-RPC response in a JSON or SSE body.
function rpcResponse(contentType, text, id) {
  if (contentType.includes('text/event-stream')) {
    for (const event of text.split(/\r?\n\r?\n/)) {
      const data = event.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      if (!data.trim()) continue;
      const message = JSON.parse(data);
      if (message.id === id) return message;
    }
    throw new CheckError(`no response with id ${id} in the event stream: ${show(text)}`);
  }
  return JSON.parse(text);
}

let rpcId = 0;
// One JSON-RPC request; returns { status, headers, body (parsed JSON-RPC or JSON), text }.
async function post(token, method, params = {}) {
  const id = ++rpcId;
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL,
  };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  const response = await fetch(MCP, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, method, params }) });
  const text = await response.text();
  let body;
  try {
    body = response.ok ? rpcResponse(response.headers.get('content-type') || '', text, id) : JSON.parse(text);
  } catch (e) {
    if (e instanceof CheckError) throw e;
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

const INITIALIZE = { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'moraine-interop-oauth', version: '1.0.0' } };

// tools/call as `token`; returns the tool result (structuredContent and isError).
async function tool(token, name, args) {
  const r = await post(token, 'tools/call', { name, arguments: args });
  check(r.status === 200, `tools/call ${name} answered HTTP ${r.status}: ${show(r.text)}`);
  check(r.body && r.body.result, `tools/call ${name}: no result: ${show(r.body)}`);
  const result = r.body.result;
  check(result.structuredContent && typeof result.structuredContent === 'object', `tools/call ${name}: no structuredContent: ${show(result)}`);
  return { isError: result.isError === true, sc: result.structuredContent };
}
async function toolOk(token, name, args) {
  const { isError, sc } = await tool(token, name, args);
  check(!isError, `${name} ${show(args)} failed: ${show(sc)}`);
  return sc.data;
}

// Every session list_sessions gives `token` for `args`, following next_cursor (and the pages).
async function allSessions(token, args = {}) {
  const sessions = [];
  let cursor;
  for (let page = 1; page <= 200; page++) {
    const data = await toolOk(token, 'list_sessions', { ...WINDOW, limit: 50, ...args, ...(cursor ? { cursor } : {}) });
    sessions.push(...data.sessions);
    cursor = data.next_cursor;
    if (!cursor) {
      sessions.pages = page;
      return sessions;
    }
  }
  throw new CheckError('list_sessions: more than 200 pages');
}

// The server's one JSON error shape (src/http_error.rs): {"error": "<code>", "message": "..."}.
function checkErrorBody(r, code, what) {
  check(r.body && r.body.error === code && typeof r.body.message === 'string' && r.body.message,
    `${what}: body is not {"error": "${code}", "message": ...}: ${show(r.text)}`);
}

// Expects the endpoint to refuse `token` with 401 invalid_token.
async function expectInvalid(token, what) {
  const r = await post(token, 'tools/call', { name: 'search_sessions', arguments: { query: 'the' } });
  check(r.status === 401, `${what}: expected 401, got ${r.status}: ${show(r.text)}`);
  const c = challenge(r.headers.get('www-authenticate'));
  check(c.error === 'invalid_token', `${what}: WWW-Authenticate error is ${show(c.error)}, expected invalid_token (${r.headers.get('www-authenticate')})`);
  check(c.resource_metadata === PRM_URL, `${what}: resource_metadata is ${show(c.resource_metadata)}`);
  checkErrorBody(r, 'unauthorized', what);
  return r;
}

// --- the authorization server ----------------------------------------------------------------

function b64url(bytes) {
  return Buffer.from(bytes).toString('base64url');
}
function rsaKey(kid) {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
}
function ecKey(kid) {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...privateKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' };
}
function publicJwk(jwk) {
  const { d, p, q, dp, dq, qi, ...pub } = jwk;
  return pub;
}

let provider;
let metadata;
async function runProvider(keys) {
  if (provider) await provider.close();
  provider = await startProvider({ port: providerPort, resource: MCP, keys, introspectionSecret });
  const r = await fetch(`${provider.issuer}/.well-known/openid-configuration`);
  check(r.status === 200, `provider discovery answered ${r.status}`);
  metadata = await r.json();
  return provider;
}

// An access token for `login`, by the authorization code flow with PKCE S256 and a client
// registered dynamically (public, like a connector's); clientName "opaque…" gets an opaque token.
async function getToken(login, { scope = 'read', resource = MCP, clientName = 'interop-direct' } = {}) {
  const reg = await fetch(metadata.registration_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: clientName,
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }),
  });
  const client = await reg.json();
  check(reg.status === 201 && client.client_id, `client registration answered ${reg.status}: ${show(client)}`);
  const verifier = b64url(randomBytes(32));
  const url = new URL(metadata.authorization_endpoint);
  const state = b64url(randomBytes(12));
  for (const [k, v] of Object.entries({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: REDIRECT_URI,
    scope,
    state,
    resource,
    code_challenge: b64url(createHash('sha256').update(verifier).digest()),
    code_challenge_method: 'S256',
  })) url.searchParams.set(k, v);
  const code = await loginAndGetCode(url.href, login);
  const r = await fetch(metadata.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      client_id: client.client_id,
      code_verifier: verifier,
      resource,
    }),
  });
  const tokens = await r.json();
  check(r.status === 200 && tokens.access_token, `token endpoint answered ${r.status}: ${show(tokens)}`);
  return tokens.access_token;
}

// --- the official SDK's OAuth client ---------------------------------------------------------

// An OAuthClientProvider whose "browser" is loginAndGetCode.
class ScriptedConnector {
  constructor(login) {
    this.login = login;
    this.code = undefined;
    this.stored = {};
  }

  get redirectUrl() {
    return REDIRECT_URI;
  }

  get clientMetadata() {
    return {
      client_name: 'moraine-interop-connector',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state() {
    return b64url(randomBytes(12));
  }

  clientInformation() {
    return this.stored.client;
  }

  saveClientInformation(info) {
    this.stored.client = info;
  }

  tokens() {
    return this.stored.tokens;
  }

  saveTokens(tokens) {
    this.stored.tokens = tokens;
  }

  async redirectToAuthorization(url) {
    this.authorizationUrl = new URL(url);
    this.code = await loginAndGetCode(this.authorizationUrl.href, this.login);
  }

  saveCodeVerifier(verifier) {
    this.stored.verifier = verifier;
  }

  codeVerifier() {
    if (!this.stored.verifier) throw new Error('no code verifier saved');
    return this.stored.verifier;
  }
}

// Every HTTP exchange the SDK makes (URL, method, status, form body).
const wire = [];
async function recordingFetch(input, init = {}) {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const entry = { url, method: init.method || 'GET', body: typeof init.body === 'string' ? init.body : init.body instanceof URLSearchParams ? init.body.toString() : undefined };
  const response = await fetch(input, init);
  entry.status = response.status;
  wire.push(entry);
  return response;
}

async function sdkFlow() {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const { UnauthorizedError, auth } = await import('@modelcontextprotocol/sdk/client/auth.js');
  const info = { name: 'moraine-interop-oauth-sdk', version: '1.0.0' };
  const connector = new ScriptedConnector('alice');

  step = 'sdk: connect without a token starts the authorization';
  const first = new StreamableHTTPClientTransport(new URL(MCP), { authProvider: connector, fetch: recordingFetch });
  let refused;
  try {
    await new Client(info, { capabilities: {} }).connect(first);
  } catch (e) {
    refused = e;
  }
  check(refused instanceof UnauthorizedError, `expected UnauthorizedError, got ${refused ? `${refused.name}: ${refused.message}` : 'a connection'}`);
  check(wire.some((w) => w.url === PRM_URL && w.status === 200), `the SDK did not read ${PRM_URL}: ${show(wire.map((w) => `${w.method} ${w.url} ${w.status}`))}`);
  check(wire.some((w) => w.url.startsWith(provider.issuer) && w.url.includes('/.well-known/') && w.status === 200), 'the SDK did not read the authorization server metadata');
  const registration = wire.find((w) => w.url === metadata.registration_endpoint);
  check(registration && registration.status === 201, `the SDK did not register a client: ${show(registration)}`);
  const az = connector.authorizationUrl;
  check(az && az.origin === provider.issuer, `authorization URL ${az}`);
  check(az.searchParams.get('code_challenge_method') === 'S256' && az.searchParams.get('code_challenge'), `no PKCE S256 in ${az}`);
  check(az.searchParams.get('resource') === MCP, `resource in the authorization URL is ${show(az.searchParams.get('resource'))}`);
  check(az.searchParams.get('scope') === 'read', `scope in the authorization URL is ${show(az.searchParams.get('scope'))}, expected read (from the challenge)`);
  check(connector.code, 'no authorization code came back');
  ok(`PRM, AS metadata, DCR ${connector.stored.client.client_id.slice(0, 8)}…, PKCE S256, resource, alice signed in`);

  step = 'sdk: finishAuth exchanges the code';
  await first.finishAuth(connector.code);
  const exchange = wire.find((w) => w.url === metadata.token_endpoint);
  check(exchange && exchange.status === 200, `token request ${show(exchange)}`);
  const sent = new URLSearchParams(exchange.body || '');
  check(sent.get('code_verifier') && sent.get('resource') === MCP, `token request lacks code_verifier or resource: ${show(exchange.body)}`);
  const token = connector.stored.tokens && connector.stored.tokens.access_token;
  check(token && token.split('.').length === 3, `the SDK's access token is not a JWT: ${show(token)}`);
  const claims = decodeJwt(token);
  check(claims.aud === MCP || (Array.isArray(claims.aud) && claims.aud.includes(MCP)), `token aud is ${show(claims.aud)}, expected ${MCP}`);
  check(claims.sub === 'alice' && claims.iss === provider.issuer, `token sub/iss ${claims.sub} ${claims.iss}`);
  ok(`JWT kid ${decodeProtectedHeader(token).kid}, aud ${claims.aud}, scope ${claims.scope}`);

  step = 'sdk: reconnect, search_sessions, open';
  const client = new Client(info, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP), { authProvider: connector, fetch: recordingFetch }));
  check(client.getServerVersion()?.name === 'moraine-mcp', `serverInfo ${show(client.getServerVersion())}`);
  let hits = [];
  let query;
  for (query of QUERIES) {
    const found = await client.callTool({ name: 'search_sessions', arguments: { query, n_hits: 10 } });
    check(found.isError !== true, `search_sessions isError: ${show(found)}`);
    hits = found.structuredContent.data.results;
    if (hits.length) break;
  }
  check(hits.length > 0, `alice found nothing for ${show(QUERIES)}`);
  const sessionId = hits[0].open.session_id;
  const opened = await client.callTool({ name: 'open', arguments: { id: sessionId } });
  check(opened.isError !== true, `open ${sessionId}: ${show(opened)}`);
  check(JSON.stringify(opened.structuredContent.data).includes(sessionId), `open result does not mention ${sessionId}`);
  await client.close();
  ok(`${hits.length} hits for "${query}", opened ${sessionId}`);

  step = 'sdk: refresh token';
  check(connector.stored.tokens.refresh_token, `no refresh token: ${show(Object.keys(connector.stored.tokens))}`);
  const refreshed = await auth(connector, { serverUrl: new URL(MCP), fetchFn: recordingFetch });
  check(refreshed === 'AUTHORIZED', `auth() with a refresh token returned ${refreshed}`);
  const renewal = wire.filter((w) => w.url === metadata.token_endpoint).at(-1);
  const renewalForm = new URLSearchParams(renewal.body || '');
  check(renewalForm.get('grant_type') === 'refresh_token' && renewalForm.get('resource') === MCP, `refresh request ${show(renewal.body)}`);
  const renewed = connector.stored.tokens.access_token;
  check(renewed !== token && decodeJwt(renewed).aud === MCP, `refreshed token ${show(decodeJwt(renewed))}`);
  await toolOk(renewed, 'search_sessions', { query, n_hits: 1 });
  ok('new access token for the same resource, accepted');
  return token;
}

// --- the checks ------------------------------------------------------------------------------

function mutateLast(id) {
  const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  const last = id.at(-1);
  return id.slice(0, -1) + alphabet[(alphabet.indexOf(last) + 7) % 32];
}
// An error envelope with the ID it names replaced, for comparing two refusals.
function refusal(result, id) {
  return { isError: result.isError, code: result.sc.error?.code, message: String(result.sc.error?.message ?? '').split(id).join('<id>') };
}

async function main() {
  const K1 = rsaKey('k1');

  step = 'provider';
  await runProvider([K1]);
  ok(`${provider.issuer}, registration ${metadata.registration_endpoint}, introspection ${metadata.introspection_endpoint}`);

  step = 'unauthenticated initialize: 401 with resource_metadata';
  const anon = await post(undefined, 'initialize', INITIALIZE);
  check(anon.status === 401, `expected 401, got ${anon.status}: ${show(anon.text)}`);
  const anonChallenge = challenge(anon.headers.get('www-authenticate'));
  check(anonChallenge.resource_metadata === PRM_URL, `resource_metadata ${show(anonChallenge.resource_metadata)}, expected ${PRM_URL}`);
  check(anonChallenge.error === undefined, `a request without a token got error=${anonChallenge.error}`);
  ok(anon.headers.get('www-authenticate'));

  step = 'protected resource metadata';
  const prmResponse = await fetch(PRM_URL);
  check(prmResponse.status === 200, `GET ${PRM_URL} answered ${prmResponse.status}`);
  check((prmResponse.headers.get('content-type') || '').includes('application/json'), `content-type ${prmResponse.headers.get('content-type')}`);
  const prm = await prmResponse.json();
  check(prm.resource === MCP, `resource ${show(prm.resource)}, expected ${MCP}`);
  check(JSON.stringify(prm.authorization_servers) === JSON.stringify([provider.issuer]), `authorization_servers ${show(prm.authorization_servers)}`);
  check(Array.isArray(prm.scopes_supported) && prm.scopes_supported.includes('read') && !prm.scopes_supported.includes('offline_access'), `scopes_supported ${show(prm.scopes_supported)}`);
  check(JSON.stringify(prm.bearer_methods_supported) === JSON.stringify(['header']), `bearer_methods_supported ${show(prm.bearer_methods_supported)}`);
  const rootPrm = await fetch(`${ORIGIN}/.well-known/oauth-protected-resource`);
  check(rootPrm.status === 200, `GET /.well-known/oauth-protected-resource answered ${rootPrm.status}`);
  check(JSON.stringify(await rootPrm.json()) === JSON.stringify(prm), 'the root PRM document differs from the /mcp one');
  ok(`scopes ${prm.scopes_supported.join(' ')}; root document identical`);

  step = 'static token still works';
  const init = await post(staticToken, 'initialize', INITIALIZE);
  check(init.status === 200 && init.body?.result?.serverInfo?.name === 'moraine-mcp', `initialize: ${init.status} ${show(init.text)}`);
  const staticHits = await toolOk(staticToken, 'search_sessions', { query: 'the', n_hits: 5 });
  ok(`initialize 200, search_sessions ${staticHits.result_count} hits`);

  const sdkToken = await sdkFlow();

  step = 'tokens for alice and bob';
  const alice = await getToken('alice');
  const bob = await getToken('bob');
  const aliceClaims = decodeJwt(alice);
  check(JSON.stringify(aliceClaims.groups) === '["team-a"]' && aliceClaims.email === 'alice@example.com', `alice's claims ${show(aliceClaims)}`);
  check(JSON.stringify(decodeJwt(bob).groups) === '["admins"]', `bob's claims ${show(decodeJwt(bob))}`);
  ok('authorization code + PKCE, JWTs with groups and email');

  step = 'rights: search hits';
  let aliceHits = 0;
  let bobOther = 0;
  for (const query of QUERIES) {
    for (const token of [alice, sdkToken]) {
      const a = await toolOk(token, 'search_sessions', { query, n_hits: 50 });
      const foreign = a.results.filter((h) => h.session.source !== 'claude');
      check(foreign.length === 0, `alice saw ${foreign.length} non-claude hits for "${query}": ${show(foreign.map((h) => h.session))}`);
      aliceHits += token === alice ? a.results.length : 0;
      const bc = await toolOk(bob, 'search_sessions', { query, n_hits: 50, source: 'claude' });
      check(a.result_count <= bc.result_count, `"${query}": alice got ${a.result_count} hits, bob ${bc.result_count} for claude alone`);
    }
    const b = await toolOk(bob, 'search_sessions', { query, n_hits: 50 });
    bobOther += b.results.filter((h) => h.session.source !== 'claude').length;
  }
  check(aliceHits > 0, 'alice found nothing at all');
  check(bobOther > 0, 'bob found no non-claude hits: the demo data does not test anything');
  const codexForAlice = await tool(alice, 'search_sessions', { query: 'the', n_hits: 50, source: 'codex' });
  check(codexForAlice.isError || codexForAlice.sc.data.results.every((h) => h.session.source === 'claude'), `alice with source=codex: ${show(codexForAlice.sc)}`);
  ok(`alice ${aliceHits} hits, all claude; bob ${bobOther} hits elsewhere; source=codex gives alice ${codexForAlice.isError ? `error ${codexForAlice.sc.error?.code}` : `${codexForAlice.sc.data.result_count} hits`}`);

  step = 'rights: list_sessions pages';
  const aliceSessions = await allSessions(alice, { limit: 2 });
  const bobClaude = await allSessions(bob, { source: 'claude' });
  const bobAll = await allSessions(bob);
  check(aliceSessions.length > 2 && aliceSessions.pages > 1, `alice lists ${aliceSessions.length} sessions in ${aliceSessions.pages} page(s): no cursor followed`);
  const foreignListed = aliceSessions.filter((s) => s.session.source !== 'claude');
  check(foreignListed.length === 0, `alice listed ${show(foreignListed.map((s) => s.session))}`);
  const claudeIds = new Set(bobClaude.map((s) => s.id));
  check(aliceSessions.every((s) => claudeIds.has(s.id)), 'alice listed a session bob does not see among claude sessions');
  check(aliceSessions.length <= bobClaude.length, `alice lists ${aliceSessions.length}, bob ${bobClaude.length} claude sessions`);
  const bobSources = new Set(bobAll.map((s) => s.session.source));
  check(bobSources.size > 1, `bob sees only ${show([...bobSources])}`);
  ok(`alice ${aliceSessions.length} sessions in ${aliceSessions.pages} pages; bob ${bobClaude.length} claude of ${bobAll.length} (${[...bobSources].sort().join(', ')})`);

  step = "rights: bob's cursor";
  const bobPage = await toolOk(bob, 'list_sessions', { ...WINDOW, limit: 2 });
  check(bobPage.next_cursor, 'bob has no second page');
  const reused = await tool(alice, 'list_sessions', { ...WINDOW, limit: 2, cursor: bobPage.next_cursor });
  if (!reused.isError) {
    const leaked = reused.sc.data.sessions.filter((s) => s.session.source !== 'claude');
    check(leaked.length === 0, `bob's cursor showed alice ${show(leaked.map((s) => s.session))}`);
  }
  ok(reused.isError ? `refused: ${reused.sc.error?.code}` : `claude only (${reused.sc.data.sessions.length} sessions)`);

  step = 'rights: open and within_id of another source';
  const otherSession = bobAll.find((s) => s.session.source !== 'claude');
  let otherHit;
  for (const query of QUERIES) {
    const b = await toolOk(bob, 'search_sessions', { query, n_hits: 50 });
    otherHit = b.results.find((h) => h.session.source !== 'claude');
    if (otherHit) break;
  }
  check(otherHit, 'bob has no non-claude search hit');
  const probes = [
    ['session', otherSession.id],
    ['turn', otherHit.open.turn_id],
    ['event', otherHit.open.event_id],
  ];
  for (const [kind, id] of probes) {
    const missing = mutateLast(id);
    const bobSees = await tool(bob, 'open', { id });
    check(!bobSees.isError, `bob cannot open ${id}: ${show(bobSees.sc)}`);
    const bobMissing = await tool(bob, 'open', { id: missing });
    check(bobMissing.isError && bobMissing.sc.error?.code === 'not_found', `${missing} is not a missing ${kind} for bob: ${show(bobMissing.sc)}`);
    const hidden = refusal(await tool(alice, 'open', { id }), id);
    const absent = refusal(await tool(alice, 'open', { id: missing }), missing);
    check(hidden.isError, `alice opened ${kind} ${id} of ${otherSession.session.source}`);
    check(JSON.stringify(hidden) === JSON.stringify(absent), `open ${kind}: another source's ${show(hidden)} vs a missing one's ${show(absent)}`);
    if (kind !== 'event') {
      const within = refusal(await tool(alice, 'search_sessions', { query: 'the', within_id: id }), id);
      const withinMissing = refusal(await tool(alice, 'search_sessions', { query: 'the', within_id: missing }), missing);
      check(within.isError && JSON.stringify(within) === JSON.stringify(withinMissing), `within_id ${kind}: ${show(within)} vs ${show(withinMissing)}`);
    }
  }
  ok(`a ${otherSession.session.source} session, a ${otherHit.session.source} turn and event: the same refusal as missing IDs`);

  step = 'missing scope: 403 insufficient_scope';
  const ingestOnly = await getToken('alice', { scope: 'ingest' });
  check(decodeJwt(ingestOnly).scope === 'ingest', `the provider granted ${decodeJwt(ingestOnly).scope}`);
  const forbidden = await post(ingestOnly, 'initialize', INITIALIZE);
  check(forbidden.status === 403, `expected 403, got ${forbidden.status}: ${show(forbidden.text)}`);
  const fc = challenge(forbidden.headers.get('www-authenticate'));
  check(fc.error === 'insufficient_scope' && fc.scope === 'read' && fc.resource_metadata === PRM_URL, `WWW-Authenticate ${forbidden.headers.get('www-authenticate')}`);
  checkErrorBody(forbidden, 'forbidden', '403');
  ok(forbidden.headers.get('www-authenticate'));

  step = 'attacks: 401 invalid_token';
  const now = Math.floor(Date.now() / 1000);
  const k1Private = await importJWK(K1, 'RS256');
  const header = decodeProtectedHeader(alice);
  const mint = (claims, key = k1Private, h = header) => new SignJWT(claims).setProtectedHeader(h).sign(key);
  const base = { ...aliceClaims, iat: now - 60, exp: now + 3600 };
  const control = await mint(base);
  await toolOk(control, 'search_sessions', { query: 'the', n_hits: 1 });
  await toolOk(await mint({ ...base, aud: [OTHER_RESOURCE, MCP] }), 'search_sessions', { query: 'the', n_hits: 1 });
  const rogue = await importJWK(rsaKey('k9'), 'RS256');
  const spki = Buffer.from(await exportSPKI(await importJWK(publicJwk(K1), 'RS256')));
  const [h64, p64, s64] = alice.split('.');
  const tampered = `${h64}.${b64url(JSON.stringify({ ...aliceClaims, groups: ['admins'] }))}.${s64}`;
  check(p64 !== tampered.split('.')[1], 'the tampered payload equals the real one');
  const realOther = await getToken('alice', { resource: OTHER_RESOURCE });
  check(decodeJwt(realOther).aud === OTHER_RESOURCE, `the provider minted aud ${decodeJwt(realOther).aud}`);
  const attacks = [
    ['expired 10 min ago', await mint({ ...base, iat: now - 4200, exp: now - 600 })],
    ['not valid for 10 min', await mint({ ...base, nbf: now + 600 })],
    ['wrong issuer', await mint({ ...base, iss: 'http://127.0.0.1:1' })],
    ['wrong audience (minted)', await mint({ ...base, aud: OTHER_RESOURCE })],
    ['wrong audience (real token)', realOther],
    ['audience with a trailing slash', await mint({ ...base, aud: `${MCP}/` })],
    ['audience missing', await mint((({ aud, ...rest }) => rest)(base))],
    ['unknown kid', await mint(base, rogue, { ...header, kid: 'k9' })],
    ['kid k1, other key', await mint(base, rogue)],
    ['alg none', `${b64url(JSON.stringify({ alg: 'none', typ: 'at+jwt', kid: 'k1' }))}.${b64url(JSON.stringify(base))}.`],
    ['HS256 keyed with the SPKI PEM', await mint(base, new Uint8Array(spki), { alg: 'HS256', typ: 'at+jwt', kid: 'k1' })],
    ['HS256 keyed with the public JWK', await mint(base, new TextEncoder().encode(JSON.stringify(publicJwk(K1))), { alg: 'HS256', typ: 'at+jwt', kid: 'k1' })],
    ['tampered payload (groups admins)', tampered],
    ['garbage', 'garbage'],
    ['garbage JWT', 'eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl'],
  ];
  for (const [what, token] of attacks) await expectInvalid(token, what);
  ok(`${attacks.length} refused: ${attacks.map(([w]) => w).join('; ')}`);

  step = "a person pushes as their name, never as a static token's source";
  const status = async (token) => {
    const r = await fetch(`${ORIGIN}/ingest/v1/status`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ files: [] }),
    });
    const text = await r.text();
    let body = null;
    try { body = JSON.parse(text); } catch { /* shown below */ }
    return { status: r.status, text, body };
  };
  const own = await status(ingestOnly);
  check(own.status === 200 && own.body?.source === 'alice@example.com', `alice's push status: ${own.status} ${show(own.text)}`);
  const asStatic = await status(await mint({ ...base, scope: 'ingest', email: 'static-reader' }));
  check(asStatic.status === 403 && asStatic.body?.message?.includes('static token'), `a person named like a static token's source: ${asStatic.status} ${show(asStatic.text)}`);
  checkErrorBody(asStatic, 'forbidden', 'a person named like a static source');
  const unnamed = await status(await mint({ ...base, scope: 'ingest', email: '' }));
  check(unnamed.status === 403 && unnamed.body?.message?.includes('names no one'), `a token naming no one: ${unnamed.status} ${show(unnamed.text)}`);
  ok('alice@example.com pushes as herself; "static-reader" and a blank name are refused');

  step = 'bearer methods: the header only';
  const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search_sessions', arguments: { query: 'the', n_hits: 1 } } });
  const plain = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': PROTOCOL };
  const lower = await fetch(MCP, { method: 'POST', headers: { ...plain, authorization: `bearer ${control}` }, body: call });
  const lowerText = await lower.text();
  check(lower.status === 200, `"bearer" in lower case answered ${lower.status}: ${show(lowerText)}`);
  const inQuery = await fetch(`${MCP}?access_token=${encodeURIComponent(control)}`, { method: 'POST', headers: plain, body: call });
  check(inQuery.status === 401, `a token in the query string answered ${inQuery.status}`);
  check(challenge(inQuery.headers.get('www-authenticate')).error === undefined, `a token in the query string was read: ${inQuery.headers.get('www-authenticate')}`);
  await inQuery.body?.cancel();
  const inBody = await fetch(MCP, { method: 'POST', headers: { ...plain, 'content-type': 'application/x-www-form-urlencoded' }, body: `access_token=${encodeURIComponent(control)}` });
  check(inBody.status === 401, `a token in a form body answered ${inBody.status}`);
  await inBody.body?.cancel();
  ok('case-insensitive scheme; access_token in the query or a form body is not read');

  step = 'opaque token: introspection';
  const opaque = await getToken('alice', { clientName: 'opaque-connector' });
  check(!opaque.includes('.'), `expected an opaque token, got ${show(opaque)}`);
  let opaqueHits = 0;
  for (const query of QUERIES) {
    const data = await toolOk(opaque, 'search_sessions', { query, n_hits: 50 });
    check(data.results.every((h) => h.session.source === 'claude'), `alice's opaque token saw other sources for "${query}"`);
    opaqueHits += data.results.length;
  }
  check(opaqueHits > 0, "alice's opaque token found nothing");
  await expectInvalid(b64url(randomBytes(32)), 'an inactive opaque token');
  ok(`${opaqueHits} hits, claude only (groups from introspection); an unknown one refused`);

  step = 'key rotation: new kid accepted, old one still published';
  const K2 = ecKey('k2');
  await runProvider([K2, K1]);
  // The server refetches keys for an unknown kid at most once per jwks_refresh_cooldown_secs
  // (1 s here), and the unknown-kid attack above just made it fetch them.
  await new Promise((resolve) => setTimeout(resolve, 1200));
  const aliceK2 = await getToken('alice');
  check(decodeProtectedHeader(aliceK2).kid === 'k2' && decodeProtectedHeader(aliceK2).alg === 'ES256', `new token header ${show(decodeProtectedHeader(aliceK2))}`);
  await toolOk(aliceK2, 'search_sessions', { query: 'the', n_hits: 1 });
  await toolOk(alice, 'search_sessions', { query: 'the', n_hits: 1 });
  ok('ES256 token with kid k2 and the old k1 token both accepted');

  step = 'key rotation: retired kid refused after the cache expires';
  await runProvider([K2]);
  const started = Date.now();
  let refusedAfter;
  while (Date.now() - started < 20000) {
    const r = await post(alice, 'tools/call', { name: 'search_sessions', arguments: { query: 'the', n_hits: 1 } });
    if (r.status === 401) {
      refusedAfter = Date.now() - started;
      break;
    }
    check(r.status === 200, `k1 token got ${r.status} during rotation: ${show(r.text)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  check(refusedAfter !== undefined, 'the k1 token was still accepted 20 s after k1 was withdrawn');
  await expectInvalid(alice, 'the withdrawn k1 token');
  await toolOk(aliceK2, 'search_sessions', { query: 'the', n_hits: 1 });
  ok(`k1 refused ${(refusedAfter / 1000).toFixed(1)} s after withdrawal; k2 still accepted`);

  step = 'metrics';
  const metricsResponse = await fetch(`${ORIGIN}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
  check(metricsResponse.status === 200, `/metrics answered ${metricsResponse.status}`);
  const metrics = await metricsResponse.text();
  const auth = metrics.split('\n').filter((l) => l.startsWith('moraine_mcp_auth_requests_total{'));
  const labels = (line) => Object.fromEntries([...line.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
  const count = (method, outcome) => auth.filter((l) => {
    const x = labels(l);
    return x.method === method && x.outcome === outcome && Number(l.trim().split(/\s+/).at(-1)) > 0;
  }).length;
  for (const outcome of ['accepted', 'expired', 'forbidden']) {
    check(count('oauth', outcome) > 0, `no method="oauth" outcome="${outcome}" sample in ${show(auth.join('\n'), 2000)}`);
  }
  const named = metrics.split('\n').filter((l) => /alice|bob|example\.com/i.test(l));
  check(named.length === 0, `/metrics names people: ${show(named)}`);
  const outcomes = auth
    .map((l) => ({ ...labels(l), n: Number(l.trim().split(/\s+/).at(-1)) }))
    .filter((x) => x.method === 'oauth' && x.n > 0)
    .map((x) => `${x.outcome} ${x.n}`)
    .sort();
  ok(`oauth outcomes: ${outcomes.join(', ')}; no names`);
}

main()
  .then(
    () => {
      console.log(`oauth: all ${passed} checks passed`);
      return 0;
    },
    (e) => {
      const detail = e instanceof CheckError
        ? e.message
        : `${e && e.name ? `${e.name}: ` : ''}${e && e.message ? e.message : show(e)}${e && e.cause ? ` (cause: ${e.cause.code || ''} ${e.cause.message || show(e.cause)})` : ''}\n${e && e.stack ? e.stack : ''}`;
      console.error(`FAIL oauth: ${step}: ${detail}`);
      console.error(`oauth: ${passed} checks passed before the failure`);
      return 1;
    },
  )
  .then(async (code) => {
    if (provider) await provider.close().catch(() => {});
    process.exit(code);
  });
