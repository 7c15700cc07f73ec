/**
 * The flow-center client (SPEC §9, seed 000 §7.3–§7.4): look an instance up by business key and
 * (re)send an apply, every request signed ({@link ./sign.js}). Nothing is retried here — the
 * caller decides — and nothing is thrown for a failed call: timeouts, network errors, HTTP
 * statuses and malformed bodies come back as typed results. The secret is used for the HMAC
 * only; it never appears in a result, an error or a log line.
 */
import http from 'node:http';
import https from 'node:https';
import { canonicalize } from '../canon/index.js';
import { canonicalQuery, newNonce, signedHeaders } from './sign.js';

/** Instance statuses the flow center reports (seed 000 §7.3: 10/20 running, 30 rejected, 40 withdrawn). */
export const FLOW_STATUSES = [10, 20, 30, 40] as const;
export type FlowStatus = (typeof FLOW_STATUSES)[number];

/** The apply guard's branch codes (seed 000 §7.4, `ApplyResultV2.branch`), a closed set. */
export const APPLY_BRANCHES = [
  'CREATED',
  'IDEMPOTENT',
  'SAME_REQUEST',
  'STALE_ROUND',
  'REPLAY_ONLY',
  'RESTARTED',
  'CONCURRENT_CREATED',
] as const;
export type ApplyBranch = (typeof APPLY_BRANCHES)[number];

/** A flow instance as the flow center describes it; `submitterId` as an exact decimal string. */
export interface FlowInstance {
  readonly instanceId: string;
  readonly bizType: string;
  readonly bizId: string;
  readonly status: FlowStatus;
  readonly applyAppKey: string;
  readonly submitterId: string;
  readonly flowGuid: string;
  /** the instance's apply round, null when the flow center does not say */
  readonly round: number | null;
}

/** Why a call gave no usable answer. None of these says whether the flow center acted. */
export type FlowError =
  | { readonly kind: 'timeout'; readonly detail: string }
  | { readonly kind: 'network'; readonly detail: string }
  | { readonly kind: 'http'; readonly status: number; readonly detail: string }
  | { readonly kind: 'malformed'; readonly detail: string };

/** The answer to `GET /oapi/flow/instance`. */
export type LookupResult =
  | { readonly kind: 'found'; readonly instance: FlowInstance }
  | { readonly kind: 'not-found' }
  | FlowError;

/**
 * The answer to `POST /oapi/flow/apply`. `unknown-branch`: an answer whose branch is a non-empty
 * string outside the seven codes — an answer, not an error: it is never resent (seed 000 §7.4),
 * whatever its instance looks like (`instance` null and `problem` saying why when it is absent
 * or invalid: the branch is what a person needs).
 */
export type ApplyResult =
  | { readonly kind: 'applied'; readonly branch: ApplyBranch; readonly instance: FlowInstance }
  | {
      readonly kind: 'unknown-branch';
      readonly branch: string;
      readonly instance: FlowInstance | null;
      readonly problem?: string;
    }
  | FlowError;

/** What an apply carries: the command row's business key, ownership, token and attempt. */
export interface ApplyRequest {
  readonly bizType: string;
  readonly bizId: string;
  readonly applyAppKey: string;
  /** decimal integer text (BIGINT), sent as a JSON number literal without going through a JS number */
  readonly submitterId: string;
  readonly flowGuid: string;
  readonly requestToken: string;
  readonly attempt: number;
}

export interface FlowClientOptions {
  /** base URL; a path prefix is kept (`https://gw/flow` → `https://gw/flow/oapi/flow/apply`) */
  readonly baseUrl: string;
  readonly appKey: string;
  readonly secret: string;
  /** per request, including reading the body */
  readonly timeoutMs: number;
  /** keep-alive connections kept open at most (default 64; set it to the run's concurrency) */
  readonly maxSockets?: number;
  /** Unix milliseconds for the timestamp header */
  readonly now?: () => number;
  /** largest response body read, bytes (default 1 MiB) */
  readonly maxBodyBytes?: number;
}

export const LOOKUP_PATH = '/oapi/flow/instance';
/** The detail of a request abandoned by its caller's signal: it says nothing about the row. */
export const ABANDONED = 'abandoned at the stop';
export const APPLY_PATH = '/oapi/flow/apply';

const INTEGER = /^-?(0|[1-9][0-9]*)$/;

/**
 * The stable reason code of an error, as written to `last_error`: `TIMEOUT`, `NETWORK`,
 * `HTTP_<status>`, `MALFORMED`.
 * @example errorCode({ kind: 'http', status: 503, detail: '' }) // 'HTTP_503'
 */
export function errorCode(e: FlowError): string {
  switch (e.kind) {
    case 'timeout':
      return 'TIMEOUT';
    case 'network':
      return 'NETWORK';
    case 'http':
      return `HTTP_${e.status}`;
    case 'malformed':
      return 'MALFORMED';
  }
}

/**
 * JSON.parse after checking the text strictly (fc.canon.v1 reader: no duplicate members, valid
 * UTF-8, no trailing data) and with integer literals of 16 or more digits turned into strings
 * first, so a BIGINT submitter id survives exactly instead of being rounded to a double.
 * @example parseExactJson('{"submitterId":9007199254740993}') // { ok: true, value: { submitterId: '9007199254740993' } }
 */
export function parseExactJson(
  bytes: Uint8Array | string,
): { ok: true; value: unknown } | { ok: false; detail: string } {
  const strict = canonicalize(bytes);
  if (!strict.ok)
    return {
      ok: false,
      detail: `not strict JSON: ${strict.error.code} at ${strict.error.line}:${strict.error.column}`,
    };
  // The reader skips a leading byte order mark (RFC 8259 §8.1 allows ignoring one); JSON.parse would not.
  const text = (typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('utf8')).replace(/^\uFEFF/, '');
  if (!/[0-9]{16}/.test(text)) return { ok: true, value: JSON.parse(text) as unknown };
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      const m = /^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 1100))!;
      const literal = m[0];
      const isLongInteger = m[1] === undefined && m[2] === undefined && literal.replace('-', '').length >= 16;
      out += isLongInteger ? `"${literal}"` : literal;
      i += literal.length;
    } else {
      out += c;
      i += 1;
    }
  }
  return { ok: true, value: JSON.parse(out) as unknown };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Validates an instance object of a response against the business key asked for. Unknown
 * members are ignored; every known member must be present with its exact type.
 * @example validateInstance({ instanceId: 'i1', bizType: 't', bizId: '1', status: 30, applyAppKey: 'k', submitterId: 7, flowGuid: 'g', round: 1 }, { bizType: 't', bizId: '1' })
 */
export function validateInstance(
  v: unknown,
  key: { bizType: string; bizId: string },
): { ok: true; instance: FlowInstance } | { ok: false; detail: string } {
  if (!isObj(v)) return { ok: false, detail: 'instance is not an object' };
  const bad = (what: string) => ({ ok: false as const, detail: what });
  const id = v['instanceId'];
  let instanceId: string;
  if (typeof id === 'string' && id.length > 0 && id.length <= 64) instanceId = id;
  else if (typeof id === 'number' && Number.isSafeInteger(id)) instanceId = String(id);
  else return bad('instance.instanceId missing or not a string of 1–64 characters');
  if (v['bizType'] !== key.bizType) return bad('instance.bizType is not the one asked for');
  if (v['bizId'] !== key.bizId) return bad('instance.bizId is not the one asked for');
  const status = v['status'];
  if (typeof status !== 'number' || !(FLOW_STATUSES as readonly number[]).includes(status))
    return bad(`instance.status ${JSON.stringify(status)} is not one of 10, 20, 30, 40`);
  const appKey = v['applyAppKey'];
  if (typeof appKey !== 'string' || appKey === '') return bad('instance.applyAppKey missing or not a string');
  const sub = v['submitterId'];
  let submitterId: string;
  if (typeof sub === 'number' && Number.isSafeInteger(sub)) submitterId = String(sub);
  else if (typeof sub === 'string' && INTEGER.test(sub)) submitterId = sub;
  else return bad('instance.submitterId missing or not an integer');
  const guid = v['flowGuid'];
  if (typeof guid !== 'string' || guid === '') return bad('instance.flowGuid missing or not a string');
  const r = v['round'];
  let round: number | null;
  if (r === undefined || r === null) round = null;
  else if (typeof r === 'number' && Number.isSafeInteger(r) && r >= 1) round = r;
  else return bad('instance.round is not a positive integer');
  return {
    ok: true,
    instance: {
      instanceId,
      bizType: key.bizType,
      bizId: key.bizId,
      status: status as FlowStatus,
      applyAppKey: appKey,
      submitterId,
      flowGuid: guid,
      round,
    },
  };
}

/**
 * The lookup body: `{"found":false}` or `{"found":true,"instance":{…}}`. "Not found" is only
 * ever this explicit answer — an HTTP 404 is an error, since a wrong URL also answers 404.
 */
export function parseLookupBody(body: Uint8Array | string, key: { bizType: string; bizId: string }): LookupResult {
  const parsed = parseExactJson(body);
  if (!parsed.ok) return { kind: 'malformed', detail: parsed.detail };
  const v = parsed.value;
  if (!isObj(v)) return { kind: 'malformed', detail: 'body is not a JSON object' };
  if (v['found'] === false) {
    if (v['instance'] !== undefined && v['instance'] !== null)
      return { kind: 'malformed', detail: 'found is false but an instance is given' };
    return { kind: 'not-found' };
  }
  if (v['found'] !== true) return { kind: 'malformed', detail: 'found missing or not a boolean' };
  const inst = validateInstance(v['instance'], key);
  return inst.ok ? { kind: 'found', instance: inst.instance } : { kind: 'malformed', detail: inst.detail };
}

/**
 * The apply body: `{"branch":"…","instance":{…}}`. A non-empty branch outside the closed set is
 * `unknown-branch` whatever the instance (the branch is looked at first, so it is never lost to
 * a bad instance and resent); a known branch needs a valid instance. Otherwise `malformed`
 * (not strict JSON, branch missing, not a string or empty, a known branch's instance invalid).
 */
export function parseApplyBody(body: Uint8Array | string, key: { bizType: string; bizId: string }): ApplyResult {
  const parsed = parseExactJson(body);
  if (!parsed.ok) return { kind: 'malformed', detail: parsed.detail };
  const v = parsed.value;
  if (!isObj(v)) return { kind: 'malformed', detail: 'body is not a JSON object' };
  const branch = v['branch'];
  if (typeof branch !== 'string' || branch === '')
    return {
      kind: 'malformed',
      detail: `branch ${JSON.stringify(branch)?.slice(0, 40) ?? 'missing'} is not a non-empty string`,
    };
  const inst = validateInstance(v['instance'], key);
  if (!(APPLY_BRANCHES as readonly string[]).includes(branch)) {
    return inst.ok
      ? { kind: 'unknown-branch', branch, instance: inst.instance }
      : { kind: 'unknown-branch', branch, instance: null, problem: inst.detail };
  }
  if (!inst.ok) return { kind: 'malformed', detail: inst.detail };
  return { kind: 'applied', branch: branch as ApplyBranch, instance: inst.instance };
}

/**
 * The apply request body, members in this order, `submitterId` as a JSON number literal copied
 * from the decimal text (never through a JS number), `retryOnly` false.
 * @example applyBody({ bizType: 't', bizId: '1', applyAppKey: 'k', submitterId: '9007199254740993', flowGuid: 'g', requestToken: 'r', attempt: 1 })
 */
export function applyBody(req: ApplyRequest): string {
  if (!INTEGER.test(req.submitterId)) throw new TypeError('submitterId must be decimal integer text');
  if (!Number.isSafeInteger(req.attempt) || req.attempt < 1) throw new TypeError('attempt must be a positive integer');
  const s = JSON.stringify;
  return (
    `{"bizType":${s(req.bizType)},"bizId":${s(req.bizId)},"applyAppKey":${s(req.applyAppKey)},"submitterId":${req.submitterId},` +
    `"flowGuid":${s(req.flowGuid)},"requestToken":${s(req.requestToken)},"attempt":${req.attempt},"retryOnly":false}`
  );
}

/** One line of a response body for an error message: control characters out, 200 characters at most. */
function snippet(bytes: Uint8Array): string {
  const text = Buffer.from(bytes)
    .toString('utf8')
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .trim();
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

type Exchange = { kind: 'response'; status: number; body: Uint8Array } | FlowError;

const networkError = (err: Error & { code?: string }): FlowError => ({
  kind: 'network',
  detail: err.code ?? err.message,
});

/** Reads a response body of at most `max` bytes into `finish`; `abort` drops the connection. */
function readResponse(res: http.IncomingMessage, max: number, finish: (r: Exchange) => void, abort: () => void): void {
  const declared = Number(res.headers['content-length'] ?? NaN);
  const tooLarge: FlowError = { kind: 'malformed', detail: `response body larger than ${max} bytes` };
  // Length known up front: refuse an oversized body unread.
  if (Number.isSafeInteger(declared) && declared > max) {
    finish(tooLarge);
    abort();
    return;
  }
  const chunks: Buffer[] = [];
  let total = 0;
  res.on('data', (chunk: Buffer) => {
    total += chunk.byteLength;
    if (total > max) {
      finish(tooLarge);
      abort();
      return;
    }
    chunks.push(chunk);
  });
  res.on('end', () =>
    finish({
      kind: 'response',
      status: res.statusCode ?? 0,
      body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total),
    }),
  );
  res.on('error', (err) => finish(networkError(err)));
  res.on('close', () => {
    if (!res.complete) finish({ kind: 'network', detail: 'connection closed before the response was complete' });
  });
}

/**
 * The flow-center client. One instance per run; safe to call concurrently.
 * @example
 * const flow = new FlowClient({ baseUrl: 'https://flow.example', appKey: '100021', secret, timeoutMs: 5000 });
 * const found = await flow.lookup('honor_apply', 'A-1');
 * if (found.kind === 'not-found') await flow.apply({ ...command });
 */
export class FlowClient {
  private readonly base: URL;
  private readonly transport: typeof http | typeof https;
  private readonly agent: http.Agent;
  private readonly now: () => number;
  private readonly maxBodyBytes: number;

  constructor(private readonly options: FlowClientOptions) {
    let base: URL;
    try {
      base = new URL(options.baseUrl);
    } catch {
      throw new TypeError('flow center URL is not a valid URL');
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:')
      throw new TypeError('flow center URL must start with https:// or http://');
    if (base.username || base.password)
      throw new TypeError('flow center URL must not hold credentials: requests are signed with the app secret');
    if (base.search || base.hash) throw new TypeError('flow center URL must not have a query or fragment');
    if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0)
      throw new TypeError('timeoutMs must be positive');
    this.base = base;
    // node:http with a keep-alive agent rather than the global fetch: a third of the CPU per
    // request (BENCHMARKS.md, apply-command), which is what bounds resolve-unknown's rate.
    this.transport = base.protocol === 'https:' ? https : http;
    this.agent = new this.transport.Agent({ keepAlive: true, maxSockets: options.maxSockets ?? 64 });
    this.now = options.now ?? Date.now;
    this.maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  }

  /** Closes the kept-alive connections (idle ones never hold the process open). */
  close(): void {
    this.agent.destroy();
  }

  /** The base URL as it may be shown (it holds no secret). */
  get baseUrl(): string {
    return this.base.toString();
  }

  /**
   * `GET /oapi/flow/instance?bizType=…&bizId=…`. `signal` abandons the request (a service's stop
   * past its drain): a `network` error whose detail says so, the request's socket destroyed.
   */
  async lookup(bizType: string, bizId: string, signal?: AbortSignal): Promise<LookupResult> {
    const query = canonicalQuery([
      ['bizType', bizType],
      ['bizId', bizId],
    ]);
    const res = await this.send('GET', LOOKUP_PATH, query, '', signal);
    if (res.kind !== 'response') return res;
    if (res.status !== 200) return { kind: 'http', status: res.status, detail: snippet(res.body) };
    return parseLookupBody(res.body, { bizType, bizId });
  }

  /** `POST /oapi/flow/apply` with the command's token and attempt; `signal` as for {@link lookup}. */
  async apply(req: ApplyRequest, signal?: AbortSignal): Promise<ApplyResult> {
    const body = applyBody(req);
    const res = await this.send('POST', APPLY_PATH, '', body, signal);
    if (res.kind !== 'response') return res;
    if (res.status !== 200 && res.status !== 201)
      return { kind: 'http', status: res.status, detail: snippet(res.body) };
    return parseApplyBody(res.body, { bizType: req.bizType, bizId: req.bizId });
  }

  private send(
    method: 'GET' | 'POST',
    apiPath: string,
    query: string,
    body: string,
    signal?: AbortSignal,
  ): Promise<Exchange> {
    const path = `${this.base.pathname.replace(/\/+$/, '')}${apiPath}`;
    const bytes = Buffer.from(body, 'utf8');
    const headers: Record<string, string> = {
      accept: 'application/json',
      ...signedHeaders({
        method,
        path,
        query,
        appKey: this.options.appKey,
        body: bytes,
        secret: this.options.secret,
        nowSeconds: this.now() / 1000,
        nonce: newNonce(),
      }),
    };
    if (method === 'POST') {
      headers['content-type'] = 'application/json; charset=utf-8';
      headers['content-length'] = String(bytes.byteLength);
    }
    const { timeoutMs } = this.options;
    const max = this.maxBodyBytes;
    return new Promise((resolve) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      let req: http.ClientRequest | undefined;
      // One timer covers the whole exchange, body included; the first outcome wins.
      const finish = (r: Exchange) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', abandon);
        resolve(r);
      };
      const abandon = () => {
        finish({ kind: 'network', detail: ABANDONED });
        req?.destroy();
      };
      if (signal?.aborted) return abandon();
      signal?.addEventListener('abort', abandon, { once: true });
      // hostname without the brackets of an IPv6 literal (http.request would look `[::1]` up by name)
      const target = {
        protocol: this.base.protocol,
        hostname: this.base.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: this.base.port,
        path: query ? `${path}?${query}` : path,
      };
      try {
        req = this.transport.request({ ...target, method, headers, agent: this.agent }, (res) =>
          readResponse(res, max, finish, () => req?.destroy()),
        );
      } catch (err) {
        // A header value node refuses (a control character in the app key, say): a typed error too.
        finish(networkError(err as Error));
        return;
      }
      const sent = req;
      timer = setTimeout(() => {
        finish({ kind: 'timeout', detail: `no complete answer within ${timeoutMs} ms` });
        sent.destroy();
      }, timeoutMs);
      sent.on('error', (err) => finish(networkError(err)));
      sent.end(method === 'POST' ? bytes : undefined);
    });
  }
}
