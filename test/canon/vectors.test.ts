// Every vector file: the shared fc.canon.v1 vectors (from an independent JVM implementation), the
// project's copy of them, and fcctl's extra vectors (expected values from an independent Python oracle).
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CANON_ERROR_CODES, canonicalize, type CanonErrorCode } from '../../src/lib/canon/index.js';

interface Vector {
  name: string;
  input?: string;
  inputBase64?: string;
  note: string;
  canonical?: string;
  hash?: string;
  error?: true;
}
interface VectorFile {
  spec: string;
  note?: string;
  vectors: Vector[];
}

const fixtures = new URL('../../fixtures/canon/', import.meta.url);
// ../shared is beside the checkout here and in CI (issue 26): a missing vector file fails, it is
// never a reason to check less.
const shared = new URL('../../../shared/canon-vectors/fc-canon-v1.json', import.meta.url);
const files: URL[] = [new URL('fc-canon-v1.json', fixtures), new URL('fcctl-extra.json', fixtures), shared];

const load = (file: URL): VectorFile => JSON.parse(readFileSync(file, 'utf8')) as VectorFile;
const missing = (file: URL) =>
  `${file.pathname} is missing: the vector files (../shared beside the checkout) are part of this test`;

/** The error code a note names, if any (fcctl-extra notes name the expected code). */
function namedCode(note: string): CanonErrorCode | undefined {
  return (CANON_ERROR_CODES as readonly string[]).find((c) => new RegExp(`\\b${c}\\b`).test(note)) as
    | CanonErrorCode
    | undefined;
}

for (const file of files) {
  const data = existsSync(file) ? load(file) : { spec: '', vectors: [] };
  describe(file.pathname.split('/').slice(-2).join('/'), () => {
    it('is an fc.canon.v1 vector file with unique names', () => {
      expect(existsSync(file), missing(file)).toBe(true);
      expect(data.vectors.length).toBeGreaterThan(0);
      expect(data.spec).toBe('fc.canon.v1');
      expect(new Set(data.vectors.map((v) => v.name)).size).toBe(data.vectors.length);
    });
    for (const v of data.vectors) {
      it(v.name, () => {
        const input = v.inputBase64 !== undefined ? Buffer.from(v.inputBase64, 'base64') : (v.input as string);
        const r = canonicalize(input);
        if (v.error) {
          expect(r.ok, 'expected a refusal').toBe(false);
          if (!r.ok) {
            expect(CANON_ERROR_CODES).toContain(r.error.code);
            const code = namedCode(v.note);
            if (code) expect(r.error.code).toBe(code);
          }
          return;
        }
        if (!r.ok) throw new Error(`refused: ${JSON.stringify(r.error)}`);
        expect(r.canonical.toString('utf8')).toBe(v.canonical);
        expect(r.hash).toBe(v.hash);
        // Text and bytes input agree.
        const again = canonicalize(typeof input === 'string' ? Buffer.from(input, 'utf8') : input.toString('utf8'));
        if (typeof input !== 'string' && !Buffer.from(input.toString('utf8'), 'utf8').equals(input)) return;
        expect(again.ok && again.hash).toBe(v.hash);
      });
    }
  });
}

describe('fixtures/canon', () => {
  it('keeps an exact copy of the shared vectors (../shared beside the checkout)', () => {
    const copy = readFileSync(new URL('fc-canon-v1.json', fixtures), 'utf8');
    expect(existsSync(shared), missing(shared)).toBe(true);
    expect(copy).toBe(readFileSync(shared, 'utf8'));
  });
  it('fcctl-extra.json documents inputBase64 and its oracle', () => {
    const extra = load(new URL('fcctl-extra.json', fixtures));
    expect(extra.note).toMatch(/inputBase64/);
    expect(extra.note).toMatch(/oracle/);
    expect(extra.vectors.some((v) => v.inputBase64 !== undefined)).toBe(true);
  });
});
