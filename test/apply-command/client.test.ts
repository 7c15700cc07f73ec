import net from 'node:net';
import { beforeEach, describe, expect } from 'vitest';
import { FlowClient } from '../../src/lib/flow/client.js';
import { canonicalQuery, newNonce, signedHeaders } from '../../src/lib/flow/sign.js';
import { APP, APP_FLOW } from '../helpers/apply-commands.js';
import type { FlowCenter } from '../helpers/flow-center.js';
import { servicesTest } from '../helpers/services.js';

// the stand-in only: no database is asked for, so none is made
const test = servicesTest({ prefix: 'flowclient', flowApps: APP_FLOW });
let fc: FlowCenter;
let client: FlowClient;
const key = { bizType: 'honor_apply', bizId: 'A-1' };
const req = {
  ...key,
  applyAppKey: APP.key,
  submitterId: '9007199254740993',
  flowGuid: 'guid-1',
  requestToken: 'tok-1',
  attempt: 1,
};

test.beforeAll(({ flowCenter }) => {
  fc = flowCenter;
  client = new FlowClient({ baseUrl: fc.url, appKey: APP.key, secret: APP.secret, timeoutMs: 300 });
});
beforeEach(async () => {
  await fc.reset();
});

describe('flow-center client against the stand-in', () => {
  test('looks up, creates, and answers the §7.4 guard branches', async () => {
    expect(await client.lookup(key.bizType, key.bizId)).toEqual({ kind: 'not-found' });
    const created = await client.apply(req);
    expect(created).toMatchObject({
      kind: 'applied',
      branch: 'CREATED',
      instance: { status: 10, submitterId: '9007199254740993', round: 1 },
    });
    expect(await client.lookup(key.bizType, key.bizId)).toMatchObject({
      kind: 'found',
      instance: { status: 10, flowGuid: 'guid-1' },
    });
    expect(await client.apply(req)).toMatchObject({ branch: 'SAME_REQUEST' });
    expect(await client.apply({ ...req, requestToken: 'tok-2' })).toMatchObject({ branch: 'IDEMPOTENT' });
    await fc.addInstances([
      {
        ...key,
        status: 30,
        applyAppKey: APP.key,
        submitterId: '9007199254740993',
        flowGuid: 'guid-1',
        round: 1,
        requestToken: 'tok-1',
      },
    ]);
    expect(await client.apply({ ...req, requestToken: 'tok-2' })).toMatchObject({ branch: 'STALE_ROUND' });
    expect(await client.apply({ ...req, requestToken: 'tok-3', attempt: 2 })).toMatchObject({
      branch: 'RESTARTED',
      instance: { status: 10, round: 2 },
    });
    // someone else's instance: the guard refuses
    expect(await client.apply({ ...req, flowGuid: 'guid-other' })).toMatchObject({ kind: 'http', status: 409 });
  });

  test('a latency fault delays the answer by at least its length, counted from the request, and is used up', async () => {
    await fc.faults([{ path: '/oapi/flow/instance', kind: 'latency', ms: 150, count: 1 }]);
    let t0 = performance.now();
    expect(
      await new FlowClient({ baseUrl: fc.url, appKey: APP.key, secret: APP.secret, timeoutMs: 2000 }).lookup(
        't',
        'slow',
      ),
    ).toEqual({ kind: 'not-found' });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(150);
    t0 = performance.now();
    await client.lookup('t', 'fast');
    expect(performance.now() - t0).toBeLessThan(150);
  });

  test('business keys with spaces, slashes and non-ASCII are signed and sent as the canonical query', async () => {
    const odd = { bizType: 'honor apply', bizId: '甲/乙 1&x=y' };
    expect(await client.lookup(odd.bizType, odd.bizId)).toEqual({ kind: 'not-found' });
    const [entry] = await fc.log();
    expect(entry).toMatchObject({ auth: 'ok', status: 200, query: { bizType: odd.bizType, bizId: odd.bizId } });
  });

  test('keeps a base path prefix', async () => {
    const prefixed = new FlowClient({ baseUrl: `${fc.url}/gw/`, appKey: APP.key, secret: APP.secret, timeoutMs: 300 });
    await prefixed.lookup('t', 'b');
    const [entry] = await fc.log();
    // the stand-in has no such route, but the signature over the prefixed path verifies
    expect(entry).toMatchObject({ path: '/gw/oapi/flow/instance', auth: 'ok', status: 404 });
  });

  test('errors are typed results: timeout, drop, 4xx/5xx, every malformed body', async () => {
    await fc.faults([{ path: '/oapi/flow/instance', kind: 'timeout', count: 1 }]);
    expect(await client.lookup('t', 'b')).toMatchObject({ kind: 'timeout' });
    await fc.faults([{ path: '/oapi/flow/instance', kind: 'drop', count: 1 }]);
    expect(await client.lookup('t', 'b')).toMatchObject({ kind: 'network' });
    for (const status of [400, 404, 429, 500, 502, 503]) {
      await fc.faults([{ path: '*', kind: 'status', status, count: 2 }]);
      expect(await client.lookup('t', 'b')).toMatchObject({ kind: 'http', status });
      expect(await client.apply(req)).toMatchObject({ kind: 'http', status });
    }
    await fc.addInstances([
      { ...key, status: 30, applyAppKey: APP.key, submitterId: '9007199254740993', flowGuid: 'guid-1' },
    ]);
    for (const variant of [
      'not-json',
      'empty',
      'wrong-type',
      'bad-status',
      'missing-field',
      'wrong-key',
      'duplicate-key',
    ]) {
      await fc.faults([{ path: '/oapi/flow/instance', kind: 'malformed', variant, count: 1 }]);
      expect(await client.lookup(key.bizType, key.bizId), variant).toMatchObject({ kind: 'malformed' });
    }
    for (const variant of ['not-json', 'missing-field', 'bad-status']) {
      await fc.faults([{ path: '/oapi/flow/apply', kind: 'malformed', variant, count: 1, after: true }]);
      expect(await client.apply(req), variant).toMatchObject({ kind: 'malformed' });
    }
    // a well-formed answer carrying a branch outside the seven is an answer, not a malformed body
    await fc.faults([
      { path: '/oapi/flow/apply', kind: 'malformed', variant: 'unknown-branch', count: 1, after: true },
    ]);
    expect(await client.apply(req)).toMatchObject({
      kind: 'unknown-branch',
      branch: 'MAYBE_CREATED',
      instance: { bizId: key.bizId },
    });
    // …also without its instance: the branch is kept for a person, never lost to a malformed verdict
    await fc.faults([{ path: '/oapi/flow/apply', kind: 'malformed', variant: 'unknown-branch', count: 1 }]);
    expect(await client.apply(req)).toEqual({
      kind: 'unknown-branch',
      branch: 'MAYBE_CREATED',
      instance: null,
      problem: 'instance is not an object',
    });
    // a known branch without its instance is not well formed
    await fc.faults([{ path: '/oapi/flow/apply', kind: 'status', status: 200, body: { branch: 'CREATED' }, count: 1 }]);
    expect(await client.apply(req)).toMatchObject({ kind: 'malformed', detail: 'instance is not an object' });
    // a redirect is not followed (the POST would be re-sent elsewhere, unsigned for that path)
    await fc.faults([{ path: '/oapi/flow/apply', kind: 'status', status: 307, count: 1 }]);
    expect(await client.apply(req)).toMatchObject({ kind: 'http', status: 307 });
    const closed = await new Promise<number>((resolve) => {
      const srv = net.createServer().listen(0, '127.0.0.1', () => {
        const port = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(port));
      });
    });
    const refused = new FlowClient({
      baseUrl: `http://127.0.0.1:${closed}`,
      appKey: APP.key,
      secret: APP.secret,
      timeoutMs: 300,
    });
    expect(await refused.lookup('t', 'b')).toMatchObject({ kind: 'network', detail: 'ECONNREFUSED' });
  });

  test('the stand-in refuses every tampered or replayed request with 401', async () => {
    const path = '/oapi/flow/instance';
    const query = canonicalQuery([
      ['bizType', 't'],
      ['bizId', 'b'],
    ]);
    const sign = (over: { query?: string; nonce?: string; now?: number; secret?: string; appKey?: string } = {}) =>
      signedHeaders({
        method: 'GET',
        path,
        query: over.query ?? query,
        appKey: over.appKey ?? APP.key,
        body: '',
        secret: over.secret ?? APP.secret,
        nowSeconds: over.now ?? Date.now() / 1000,
        nonce: over.nonce ?? newNonce(),
      });
    const get = (headers: Record<string, string>, q = query) =>
      fetch(`${fc.url}${path}?${q}`, { headers }).then((r) => r.status);
    expect(await get(sign())).toBe(200);
    expect(
      await get(
        sign(),
        canonicalQuery([
          ['bizType', 't'],
          ['bizId', 'other'],
        ]),
      ),
    ).toBe(401); // query changed
    expect(await get(sign({ secret: 'wrong' }))).toBe(401);
    expect(await get(sign({ appKey: 'unknown' }))).toBe(401);
    expect(await get(sign({ now: Date.now() / 1000 - 3600 }))).toBe(401); // stale timestamp
    const replay = sign();
    expect(await get(replay)).toBe(200);
    expect(await get(replay)).toBe(401); // nonce reused
    const h = sign();
    expect(
      await get({ ...h, 'X-FC-Signature': h['X-FC-Signature']!.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')) }),
    ).toBe(401);
    // a body other than the signed one
    const body = JSON.stringify(req);
    const post = signedHeaders({
      method: 'POST',
      path: '/oapi/flow/apply',
      query: '',
      appKey: APP.key,
      body,
      secret: APP.secret,
      nowSeconds: Date.now() / 1000,
      nonce: newNonce(),
    });
    const status = await fetch(`${fc.url}/oapi/flow/apply`, {
      method: 'POST',
      headers: post,
      body: body.replace('tok-1', 'tok-9'),
    }).then((r) => r.status);
    expect(status).toBe(401);
    const log = await fc.log();
    expect(log.filter((e) => e.status === 401).every((e) => e.auth !== 'ok')).toBe(true);
    // nothing was created by the refused POST
    expect(await fc.instances()).toEqual([]);
  });

  test('the stand-in answers 403 to a correctly signed apply for another app (README: 403 = the app may not do this), and checks the signature first', async () => {
    const foreign = { ...req, applyAppKey: '100099' };
    expect(await client.apply(foreign)).toMatchObject({
      kind: 'http',
      status: 403,
      detail: expect.stringContaining('APP_KEY_MISMATCH'),
    });
    const wrong = new FlowClient({ baseUrl: fc.url, appKey: APP.key, secret: 'wrong-secret-value', timeoutMs: 300 });
    expect(await wrong.apply(foreign)).toMatchObject({
      kind: 'http',
      status: 401,
      detail: expect.stringContaining('SIGNATURE_INVALID'),
    });
    expect(await wrong.apply(req)).toMatchObject({ kind: 'http', status: 401 });
    wrong.close();
    expect((await fc.log()).map((e) => [e.method, e.status, e.auth])).toEqual([
      ['POST', 403, 'ok'],
      ['POST', 401, 'signature mismatch'],
      ['POST', 401, 'signature mismatch'],
    ]);
    // neither refusal created anything
    expect(await fc.instances()).toEqual([]);
  });

  test('a client with the wrong secret gets a typed 401, and the secret is nowhere in it', async () => {
    const wrong = new FlowClient({ baseUrl: fc.url, appKey: APP.key, secret: 'wrong-secret-value', timeoutMs: 300 });
    const r = await wrong.lookup('t', 'b');
    expect(r).toMatchObject({ kind: 'http', status: 401 });
    expect(JSON.stringify(r)).not.toContain('wrong-secret-value');
  });

  test('an IPv6 literal base URL is connected to, not looked up by name', async () => {
    const http = await import('node:http');
    const server = http.createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"found":false}'),
    );
    await new Promise<void>((r) => server.listen(0, '::1', r));
    const port = (server.address() as { port: number }).port;
    const v6 = new FlowClient({
      baseUrl: `http://[::1]:${port}`,
      appKey: APP.key,
      secret: APP.secret,
      timeoutMs: 1000,
    });
    expect(await v6.lookup('t', 'b')).toEqual({ kind: 'not-found' });
    v6.close();
    await new Promise((r) => server.close(r));
  });

  test('a header value node refuses (control character in the app key) is a typed network error, not a throw', async () => {
    const bad = new FlowClient({ baseUrl: fc.url, appKey: 'k\nX-Injected: 1', secret: APP.secret, timeoutMs: 300 });
    expect(await bad.lookup('t', 'b')).toMatchObject({ kind: 'network' });
    bad.close();
  });

  test('refuses bad base URLs up front', () => {
    for (const baseUrl of ['not a url', 'ftp://x', 'https://user:pw@x', 'https://x/?a=1']) {
      expect(() => new FlowClient({ baseUrl, appKey: 'k', secret: 's', timeoutMs: 100 })).toThrow(TypeError);
    }
  });
});
