/**
 * Request signing for the flow center (SPEC §9): HMAC-SHA256 with the app secret over a
 * canonical string of method, path, query, app key, timestamp, nonce and the body's SHA-256.
 * Pure functions; docs/flow-center.md documents the same rules.
 */
import { createHash, createHmac, randomFillSync, timingSafeEqual } from 'node:crypto';

/** The first line of every string to sign; a change of rules is a new id. */
export const SIGNING_ALGORITHM = 'FC-HMAC-SHA256';

/** Header names, as sent (HTTP header names are case-insensitive). */
export const SIGNATURE_HEADERS = {
  appKey: 'X-FC-App-Key',
  timestamp: 'X-FC-Timestamp',
  nonce: 'X-FC-Nonce',
  contentSha256: 'X-FC-Content-SHA256',
  signature: 'X-FC-Signature',
} as const;

/** SHA-256 of no bytes: the body digest of a GET. */
export const EMPTY_BODY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/**
 * RFC 3986 percent-encoding: unreserved characters (`A-Z a-z 0-9 - . _ ~`) kept, every other
 * UTF-8 byte as `%XX` with uppercase hex.
 * @example encodeRfc3986('a b/é') // 'a%20b%2F%C3%A9'
 */
export function encodeRfc3986(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * The canonical query: each name and value RFC 3986-encoded, pairs sorted by encoded name then
 * encoded value (byte order), joined as `name=value` with `&`; empty when there are none.
 * fcctl sends exactly this string as the URL's query, so what is signed is what is sent.
 * @example canonicalQuery([['bizType', 'honor'], ['bizId', 'A 1']]) // 'bizId=A%201&bizType=honor'
 */
export function canonicalQuery(params: Iterable<readonly [string, string]>): string {
  const pairs = [...params].map(([k, v]) => [encodeRfc3986(k), encodeRfc3986(v)] as const);
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

/** Lowercase hex SHA-256 of the body bytes exactly as sent. */
export function bodySha256(body: Uint8Array | string): string {
  if (body.length === 0) return EMPTY_BODY_SHA256;
  return createHash('sha256').update(body).digest('hex');
}

/** What one request's signature covers. */
export interface SigningInput {
  /** uppercase, e.g. `GET` */
  readonly method: string;
  /** the URL path as sent, percent-encoded, without the query (`/oapi/flow/instance`) */
  readonly path: string;
  /** the canonical query ({@link canonicalQuery}), empty for none */
  readonly query: string;
  readonly appKey: string;
  /** Unix seconds, decimal */
  readonly timestamp: string;
  readonly nonce: string;
  /** {@link bodySha256} of the body */
  readonly contentSha256: string;
}

/**
 * The string to sign: eight lines joined by `\n`, no trailing newline.
 * @example stringToSign({ method: 'GET', path: '/oapi/flow/instance', query: 'bizId=1&bizType=t', appKey: '100021', timestamp: '1792540800', nonce: 'ab', contentSha256: EMPTY_BODY_SHA256 })
 */
export function stringToSign(input: SigningInput): string {
  return [
    SIGNING_ALGORITHM,
    input.method.toUpperCase(),
    input.path,
    input.query,
    input.appKey,
    input.timestamp,
    input.nonce,
    input.contentSha256,
  ].join('\n');
}

/**
 * Lowercase hex HMAC-SHA256 of the string to sign, keyed with the app secret's UTF-8 bytes.
 * @example signature(secret, input) // '5d41…'
 */
export function signature(secret: string, input: SigningInput): string {
  return createHmac('sha256', secret).update(stringToSign(input), 'utf8').digest('hex');
}

/** Random bytes drawn 4 KiB at a time: one system call per 256 nonces instead of one each. */
const noncePool = Buffer.alloc(4096);
let nonceOffset = noncePool.length;

/** A fresh nonce: 16 random bytes as 32 lowercase hex characters. */
export function newNonce(): string {
  if (nonceOffset + 16 > noncePool.length) {
    randomFillSync(noncePool);
    nonceOffset = 0;
  }
  nonceOffset += 16;
  return noncePool.toString('hex', nonceOffset - 16, nonceOffset);
}

/**
 * The five signature headers of one request. The secret goes into the HMAC only: it never
 * appears in a header, a URL or a message.
 * @example signedHeaders({ method: 'GET', path, query, appKey, body: '', secret, nowSeconds: 1792540800, nonce: newNonce() })
 */
export function signedHeaders(args: {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly appKey: string;
  readonly body: Uint8Array | string;
  readonly secret: string;
  readonly nowSeconds: number;
  readonly nonce: string;
}): Record<string, string> {
  const input: SigningInput = {
    method: args.method,
    path: args.path,
    query: args.query,
    appKey: args.appKey,
    timestamp: String(Math.floor(args.nowSeconds)),
    nonce: args.nonce,
    contentSha256: bodySha256(args.body),
  };
  return {
    [SIGNATURE_HEADERS.appKey]: input.appKey,
    [SIGNATURE_HEADERS.timestamp]: input.timestamp,
    [SIGNATURE_HEADERS.nonce]: input.nonce,
    [SIGNATURE_HEADERS.contentSha256]: input.contentSha256,
    [SIGNATURE_HEADERS.signature]: signature(args.secret, input),
  };
}

/**
 * Constant-time comparison of a received signature with the expected one (what a verifier does).
 * @example verifySignature(secret, input, headers['x-fc-signature'])
 */
export function verifySignature(secret: string, input: SigningInput, received: string): boolean {
  const expected = Buffer.from(signature(secret, input), 'utf8');
  const got = Buffer.from(received, 'utf8');
  return expected.length === got.length && timingSafeEqual(expected, got);
}
