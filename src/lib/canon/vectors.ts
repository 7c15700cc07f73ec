/**
 * fc.canon.v1 test-vector files (the shape of `../shared/canon-vectors/fc-canon-v1.json`): reading
 * them strictly and checking one vector against this implementation. Used by `fcctl canon verify`.
 */
import { CANON_ALGORITHM, CANON_ERROR_CODES, canonicalize, type CanonErrorCode, type NumberMode } from './index.js';

/**
 * One vector: an input (JSON text, or exact bytes as `inputBase64`) and what it must give — the
 * canonical text and/or the hash, or an error (optionally a specific `errorCode`).
 *
 * @example
 * const v: CanonVector = { name: 'n', input: '[1.0]', expect: { kind: 'result', canonical: '[1]', hash: undefined } };
 */
export interface CanonVector {
  readonly name: string;
  /** `input` as text (one with an unpaired surrogate has no UTF-8 form: INVALID_UTF8), or `inputBase64` decoded */
  readonly input: string | Buffer;
  readonly expect:
    | { readonly kind: 'result'; readonly canonical: string | undefined; readonly hash: string | undefined }
    | { readonly kind: 'error'; readonly code: CanonErrorCode | undefined };
}

/**
 * A parsed vector file.
 *
 * @example
 * const file: CanonVectorFile = parseVectorFile(text, 'fixtures/canon/fc-canon-v1.json');
 * console.log(file.vectors.length);
 */
export interface CanonVectorFile {
  readonly label: string;
  readonly vectors: readonly CanonVector[];
}

/**
 * A vector file that is not of the expected shape; the message names the file and the vector.
 *
 * @example
 * try { parseVectorFile('{}', 'x.json'); } catch (e) { if (e instanceof VectorFileError) console.error(e.message); } // x.json: no "vectors" array
 */
export class VectorFileError extends Error {
  override readonly name = 'VectorFileError';
}

const HASH = /^[0-9a-f]{64}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Reads a vector file strictly: `{"spec": "fc.canon.v1" (optional, but no other value), "vectors":
 * [...]}`, at least one vector, unique non-empty names; each vector has exactly one of `input`
 * (string) and `inputBase64` (canonical base64), then either `error: true` (with an optional
 * `errorCode` from {@link CANON_ERROR_CODES}) or at least one of `canonical` (string) and `hash`
 * (64 lowercase hex). Other members (`note`, …) are ignored.
 *
 * @throws {VectorFileError} for anything else, naming the file and the vector.
 * @example
 * const file = parseVectorFile(readFileSync(path, 'utf8'), path);
 */
export function parseVectorFile(text: string, label: string): CanonVectorFile {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new VectorFileError(`${label}: not JSON (${(e as Error).message.split('\n')[0]})`);
  }
  if (!isObject(data)) throw new VectorFileError(`${label}: not a JSON object`);
  if (data['spec'] !== undefined && data['spec'] !== CANON_ALGORITHM) {
    throw new VectorFileError(
      `${label}: spec is ${JSON.stringify(data['spec'])}, not ${JSON.stringify(CANON_ALGORITHM)}`,
    );
  }
  const raw = data['vectors'];
  if (!Array.isArray(raw)) throw new VectorFileError(`${label}: no "vectors" array`);
  if (raw.length === 0) throw new VectorFileError(`${label}: "vectors" is empty`);
  const names = new Set<string>();
  const vectors = raw.map((v: unknown, i: number): CanonVector => {
    const where = `${label}: vector ${i + 1}`;
    if (!isObject(v)) throw new VectorFileError(`${where}: not an object`);
    const name = v['name'];
    if (typeof name !== 'string' || name === '')
      throw new VectorFileError(`${where}: "name" must be a non-empty string`);
    const at = `${where} (${JSON.stringify(name)})`;
    if (names.has(name)) throw new VectorFileError(`${at}: duplicate name`);
    names.add(name);

    const { input: text, inputBase64: b64 } = v;
    if ((text === undefined) === (b64 === undefined))
      throw new VectorFileError(`${at}: needs exactly one of "input" and "inputBase64"`);
    let input: string | Buffer;
    if (text !== undefined) {
      if (typeof text !== 'string') throw new VectorFileError(`${at}: "input" must be a string`);
      input = text;
    } else {
      if (typeof b64 !== 'string' || !BASE64.test(b64))
        throw new VectorFileError(`${at}: "inputBase64" must be base64 text`);
      input = Buffer.from(b64, 'base64');
    }

    const { error, errorCode, canonical, hash } = v;
    if (error !== undefined && error !== true) throw new VectorFileError(`${at}: "error" must be true when present`);
    if (error === true) {
      if (canonical !== undefined || hash !== undefined)
        throw new VectorFileError(`${at}: an error vector has no "canonical" or "hash"`);
      if (errorCode !== undefined && !(CANON_ERROR_CODES as readonly unknown[]).includes(errorCode)) {
        throw new VectorFileError(
          `${at}: "errorCode" ${JSON.stringify(errorCode)} is not one of ${CANON_ERROR_CODES.join(', ')}`,
        );
      }
      return { name, input, expect: { kind: 'error', code: errorCode as CanonErrorCode | undefined } };
    }
    if (errorCode !== undefined) throw new VectorFileError(`${at}: "errorCode" without "error": true`);
    if (canonical === undefined && hash === undefined)
      throw new VectorFileError(`${at}: needs "canonical" or "hash", or "error": true`);
    if (canonical !== undefined && typeof canonical !== 'string')
      throw new VectorFileError(`${at}: "canonical" must be a string`);
    if (hash !== undefined && (typeof hash !== 'string' || !HASH.test(hash)))
      throw new VectorFileError(`${at}: "hash" must be 64 lowercase hex digits`);
    return {
      name,
      input,
      expect: { kind: 'result', canonical: canonical as string | undefined, hash: hash as string | undefined },
    };
  });
  return { label, vectors };
}

/**
 * The outcome of one vector: `pass`, or `fail` with a one-line reason; `got` is what fcctl produced.
 *
 * @example
 * const r: VectorOutcome = checkVector(vector, 'exact');
 * if (r.kind === 'fail') console.log(r.detail);
 */
export type VectorOutcome = {
  readonly kind: 'pass' | 'fail';
  readonly detail: string;
  readonly got: { readonly hash: string } | { readonly errorCode: CanonErrorCode };
};

/**
 * Checks one vector in a number mode. The expected canonical text is compared as the bytes that
 * are hashed (UTF-8, an unpaired surrogate as `?`).
 *
 * @example
 * checkVector({ name: 'n', input: Buffer.from('[1.0]'), expect: { kind: 'result', canonical: '[1]', hash: undefined } }, 'exact').kind; // 'pass'
 */
export function checkVector(vector: CanonVector, numberMode: NumberMode): VectorOutcome {
  const r = canonicalize(vector.input, { numberMode });
  const expect = vector.expect;
  if (expect.kind === 'error') {
    if (r.ok)
      return {
        kind: 'fail',
        detail: `expected an error${expect.code ? ` ${expect.code}` : ''}, got hash ${r.hash}`,
        got: { hash: r.hash },
      };
    const got = { errorCode: r.error.code };
    if (expect.code && expect.code !== r.error.code)
      return { kind: 'fail', detail: `expected error ${expect.code}, got ${r.error.code}: ${r.error.message}`, got };
    return { kind: 'pass', detail: `error ${r.error.code}`, got };
  }
  if (!r.ok) {
    return {
      kind: 'fail',
      detail: `refused: ${r.error.code}: ${r.error.message} (line ${r.error.line}, column ${r.error.column})`,
      got: { errorCode: r.error.code },
    };
  }
  const got = { hash: r.hash };
  if (expect.canonical !== undefined) {
    const want = javaUtf8(expect.canonical);
    if (!want.equals(r.canonical)) {
      return {
        kind: 'fail',
        detail: `canonical text differs at byte ${firstDifference(want, r.canonical)}: got ${excerpt(r.canonical)}`,
        got,
      };
    }
  }
  if (expect.hash !== undefined && expect.hash !== r.hash)
    return { kind: 'fail', detail: `hash differs: expected ${expect.hash}, got ${r.hash}`, got };
  return { kind: 'pass', detail: `hash ${r.hash}`, got };
}

/** Bytes of a string as Java's `getBytes(UTF_8)`: each unpaired surrogate becomes `?`. */
function javaUtf8(text: string): Buffer {
  return Buffer.from(
    text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '?'),
    'utf8',
  );
}

function firstDifference(a: Buffer, b: Buffer): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return n;
}

function excerpt(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
