// A real OAuth 2.1 authorization server for the interop checks: panva's oidc-provider on
// 127.0.0.1, with open dynamic client registration, PKCE, resource indicators (RFC 8707: JWT or
// opaque access tokens whose audience is the requested resource), token introspection (RFC 7662)
// for the resource server's confidential client, and two fixed people.
//
//   import { startProvider, loginAndGetCode } from './oauth-provider.mjs';
//   const { issuer, close } = await startProvider({ port, resource, keys, introspectionSecret, clients });
//   const code = await loginAndGetCode(authorizationUrl, 'alice');
//
// clients: more registered clients (e.g. the web pages' own). keys: private JWKs, each with a kid; the first one signs access tokens (a test rotates keys by
// closing the provider and starting it again on the same port with other keys). State (clients,
// grants, opaque tokens) lives in memory and ends with close().

import Provider, { errors as oidcErrors } from 'oidc-provider';

export const INTROSPECTION_CLIENT_ID = 'moraine-mcp';

export const PEOPLE = {
  alice: { email: 'alice@example.com', groups: ['team-a'] },
  bob: { email: 'bob@example.com', groups: ['admins'] },
};

// The JWS algorithm a private JWK signs with: its `alg`, else the usual one for its type.
export function signingAlg(jwk) {
  if (jwk.alg) return jwk.alg;
  if (jwk.kty === 'RSA') return 'RS256';
  if (jwk.kty === 'EC') return { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' }[jwk.crv];
  if (jwk.kty === 'OKP') return 'EdDSA';
  throw new Error(`no signing algorithm known for a ${jwk.kty} key`);
}

function isHttpUrl(value) {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && !url.hash;
  } catch {
    return false;
  }
}

export async function startProvider({
  port,
  resource,
  keys,
  introspectionSecret = process.env.OAUTH_INTROSPECTION_SECRET,
  clients = [],
  quiet = true,
}) {
  if (!Number.isInteger(port) || port <= 0) throw new Error(`startProvider: bad port ${port}`);
  if (!isHttpUrl(resource)) throw new Error(`startProvider: resource must be an http(s) URL, got ${resource}`);
  if (!Array.isArray(keys) || keys.length === 0) throw new Error('startProvider: keys must be a non-empty array of private JWKs');
  for (const key of keys) {
    if (!key.kid) throw new Error('startProvider: every key needs a kid');
    if (!key.d) throw new Error(`startProvider: key ${key.kid} is not a private key`);
  }
  if (!introspectionSecret) throw new Error('startProvider: no introspection client secret (OAUTH_INTROSPECTION_SECRET)');

  const issuer = `http://127.0.0.1:${port}`;
  const alg = signingAlg(keys[0]);
  const signing = keys.map((k) => ({ ...k, alg: signingAlg(k), use: 'sig' }));

  const configuration = {
    clients: [
      {
        client_id: INTROSPECTION_CLIENT_ID,
        client_secret: introspectionSecret,
        token_endpoint_auth_method: 'client_secret_basic',
        grant_types: [],
        redirect_uris: [],
        response_types: [],
      },
      ...clients,
    ],
    // Clients registered while only a non-RSA key is published still get ID tokens it can sign.
    clientDefaults: {
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: alg,
    },
    jwks: { keys: signing },
    scopes: ['openid', 'email', 'read', 'ingest'],
    claims: { email: ['email'], groups: ['groups'] },
    async findAccount(_ctx, sub) {
      const person = PEOPLE[sub];
      if (!person) return undefined;
      return {
        accountId: sub,
        async claims() {
          return { sub, email: person.email, groups: [...person.groups] };
        },
      };
    },
    // Refresh tokens for clients registered for them (OAuth 2.1 connectors), no offline_access.
    async issueRefreshToken(_ctx, client) {
      return client.grantTypeAllowed('refresh_token');
    },
    // The resource server maps rights from the access token, so it carries these too (in the JWT,
    // and in the introspection response of an opaque token).
    async extraTokenClaims(_ctx, token) {
      const person = token.accountId && PEOPLE[token.accountId];
      if (!person) return undefined;
      return { email: person.email, groups: [...person.groups] };
    },
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      introspection: {
        enabled: true,
        async allowedPolicy(_ctx, client, token) {
          if (client.clientId === INTROSPECTION_CLIENT_ID) return true;
          return client.clientAuthMethod !== 'none' || token.clientId === client.clientId;
        },
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, _client, oneOf) => oneOf ?? resource,
        useGrantedResource: async () => true,
        async getResourceServerInfo(_ctx, resourceIndicator, client) {
          if (!isHttpUrl(resourceIndicator)) {
            throw new oidcErrors.InvalidTarget(`resource ${resourceIndicator} is not an http(s) URL`);
          }
          return {
            audience: resourceIndicator,
            scope: 'read ingest',
            accessTokenFormat: client.clientName?.startsWith('opaque') ? 'opaque' : 'jwt',
            jwt: { sign: { alg } },
          };
        },
      },
    },
    // PKCE: oidc-provider's default requires it (S256 only) for public clients.
    ttl: {
      AccessToken: 3600,
      AuthorizationCode: 60,
      Grant: 3600,
      IdToken: 3600,
      Interaction: 600,
      RefreshToken: 86400,
      Session: 3600,
    },
    renderError(ctx, out) {
      ctx.type = 'json';
      ctx.body = out;
    },
  };

  const provider = new Provider(issuer, configuration);
  if (!quiet) {
    provider.on('server_error', (_ctx, err) => console.error('oauth-provider: server_error', err));
  }
  const server = await new Promise((resolve, reject) => {
    const s = provider.listen(port, '127.0.0.1');
    s.once('listening', () => resolve(s));
    s.once('error', reject);
  });

  let closed = false;
  async function close() {
    if (closed) return;
    closed = true;
    await new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    // Lets fetch in this process see its pooled keep-alive connections closed before it would
    // reuse one (undici fails such a request with "other side closed" instead of retrying).
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { issuer, provider, close };
}

// --- a scripted browser ---------------------------------------------------------------------

class CookieJar {
  constructor() {
    this.cookies = new Map();
  }

  store(response) {
    const lines = typeof response.headers.getSetCookie === 'function' ? response.headers.getSetCookie() : [];
    for (const line of lines) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq < 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expires = attrs.map((a) => a.trim()).find((a) => /^expires=/i.test(a));
      const gone = !value || (expires && Date.parse(expires.slice(8)) <= Date.now())
        || attrs.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (gone) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

function htmlDecode(s) {
  return s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

// The first <form> of a page: its action and its named inputs (with their values).
function parseForm(html) {
  const form = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(html);
  if (!form) return undefined;
  const attr = (tag, name) => {
    const m = new RegExp(`\\b${name}\\s*=\\s*("([^"]*)"|'([^']*)')`, 'i').exec(tag);
    return m ? htmlDecode(m[2] ?? m[3]) : undefined;
  };
  const inputs = [];
  for (const m of form[2].matchAll(/<input\b[^>]*>/gi)) {
    const name = attr(m[0], 'name');
    if (name) inputs.push({ name, type: (attr(m[0], 'type') || 'text').toLowerCase(), value: attr(m[0], 'value') ?? '' });
  }
  return { action: attr(form[1], 'action') || '', method: (attr(form[1], 'method') || 'get').toLowerCase(), inputs };
}

// Follows an authorization URL like a browser: signs in as `login` (any password) on
// oidc-provider's development login page, grants the consent, and returns the authorization code
// from the redirect to the client's redirect_uri (whose state and iss must match the request).
export async function loginAndGetCode(authorizationUrl, login) {
  const start = new URL(authorizationUrl);
  const redirectUri = start.searchParams.get('redirect_uri');
  const state = start.searchParams.get('state');
  if (!redirectUri) throw new Error('loginAndGetCode: the authorization URL has no redirect_uri');
  const jar = new CookieJar();
  let url = start.href;
  let init = { method: 'GET' };
  const trail = [];
  for (let hop = 0; hop < 30; hop++) {
    if (url.startsWith(redirectUri)) {
      const back = new URL(url);
      const params = back.searchParams;
      if (params.get('error')) {
        throw new Error(`loginAndGetCode: authorization failed: ${params.get('error')}: ${params.get('error_description') || ''}`);
      }
      if (state !== null && params.get('state') !== state) {
        throw new Error(`loginAndGetCode: state came back as ${params.get('state')}, sent ${state}`);
      }
      if (params.has('iss') && params.get('iss') !== start.origin) {
        throw new Error(`loginAndGetCode: iss came back as ${params.get('iss')}, expected ${start.origin}`);
      }
      const code = params.get('code');
      if (!code) throw new Error(`loginAndGetCode: no code in ${url}`);
      return code;
    }
    trail.push(`${init.method} ${url}`);
    const headers = new Headers(init.headers);
    const cookie = jar.header();
    if (cookie) headers.set('cookie', cookie);
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    jar.store(response);
    if (response.status >= 300 && response.status < 400) {
      const location = response.headers.get('location');
      if (!location) throw new Error(`loginAndGetCode: ${response.status} without Location from ${url}`);
      await response.body?.cancel();
      url = new URL(location, url).href;
      init = { method: 'GET' };
      continue;
    }
    const body = await response.text();
    if (response.status !== 200) {
      throw new Error(`loginAndGetCode: ${response.status} from ${url}: ${body.slice(0, 300)}`);
    }
    const form = parseForm(body);
    if (!form) throw new Error(`loginAndGetCode: no form on ${url}: ${body.slice(0, 300)}`);
    const fields = new URLSearchParams();
    for (const input of form.inputs) {
      if (input.name === 'login') fields.set('login', login);
      else if (input.type === 'password') fields.set(input.name, 'any-password');
      else if (input.type !== 'checkbox') fields.set(input.name, input.value);
    }
    url = new URL(form.action || url, url).href;
    init = {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: fields.toString(),
    };
  }
  throw new Error(`loginAndGetCode: no code after 30 hops: ${trail.join(' -> ')}`);
}
