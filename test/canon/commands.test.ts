// `fcctl canon hash | verify | check-envelope`, in process (runCli) and as the built binary (spawnCli),
// plus the line splitter and buffered writer behind `hash --lines`, and the pure envelope check.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, describe, expect, expectTypeOf, it } from 'vitest';
import { contentHash } from '../../src/lib/canon/index.js';
import { checkVector, parseVectorFile, VectorFileError } from '../../src/lib/canon/vectors.js';
import { BufferedWriter, type LineEvent, LineSplitter } from '../../src/lib/cli/lines.js';
import { buildEnvelope } from '../../src/lib/deliveries/envelope.js';
import type { DeliveryRow } from '../../src/lib/deliveries/types.js';
import {
  checkEnvelope,
  ENVELOPE_MEMBERS,
  type EnvelopeCheck,
  type EnvelopeProblemCode,
} from '../../src/lib/canon/check-envelope/decide.js';
import { main } from '../../src/main.js';
import { cleanEnv, jsonLines, runCli, spawnCli } from '../helpers/cli.js';
import { testIo } from '../helpers/io.js';

const dir = mkdtempSync(join(tmpdir(), 'fcctl-canon-cmd-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, content: string | Buffer) => {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
};
const fixturesDir = new URL('../../fixtures/canon/', import.meta.url).pathname;
const fixtureFiles = readdirSync(fixturesDir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => join(fixturesDir, f));
const vectorCount = fixtureFiles.reduce(
  (n, f) => n + (JSON.parse(readFileSync(f, 'utf8')) as { vectors: unknown[] }).vectors.length,
  0,
);
const lines = (text: string) => text.split('\n').slice(0, -1);

// ------------------------------------------------------------------------------------ verify

describe('canon verify', () => {
  it('passes every project vector (fixtures/canon/*.json) and states the number mode', async () => {
    const r = await runCli(['canon', 'verify', ...fixtureFiles]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = jsonLines(r.stdout);
    const summary = out.at(-1)!;
    expect(summary).toMatchObject({
      type: 'summary',
      command: 'canon verify',
      exitCode: 0,
      algorithm: 'fc.canon.v1',
      numberMode: 'exact',
      files: fixtureFiles.length,
      failed: 0,
    });
    expect(summary['passed']).toBe(vectorCount);
    expect(out.filter((e) => e['type'] === 'vector')).toHaveLength(vectorCount);
  });

  it('the built binary passes them too (the CI invocation)', async () => {
    const r = await spawnCli(['canon', 'verify', ...fixtureFiles], { env: { ...process.env, CI: '1' } });
    expect(r.code).toBe(0);
    expect(jsonLines(r.stdout).at(-1)).toMatchObject({ type: 'summary', passed: vectorCount, failed: 0 });
  });

  const shared = JSON.parse(readFileSync(join(fixturesDir, 'fc-canon-v1.json'), 'utf8')) as {
    spec: string;
    vectors: Array<Record<string, unknown>>;
  };
  const wrong = structuredClone(shared);
  const victim = wrong.vectors.find((v) => typeof v['hash'] === 'string')!;
  victim['hash'] = '0'.repeat(64);
  const wrongFile = file('wrong-hash.json', JSON.stringify(wrong));

  it('exits 1 on one wrong hash and names the vector (JSON lines)', async () => {
    const r = await runCli(['canon', 'verify', wrongFile]);
    expect(r.code).toBe(1);
    const out = jsonLines(r.stdout);
    const failed = out.filter((e) => e['result'] === 'fail');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ type: 'vector', file: wrongFile, name: victim['name'], result: 'fail' });
    expect(String(failed[0]!['detail'])).toMatch(/^hash differs: expected 0{64}, got [0-9a-f]{64}$/);
    expect(out.at(-1)).toMatchObject({ type: 'summary', exitCode: 1, failed: 1, passed: shared.vectors.length - 1 });
  });

  it('prints a pass/FAIL table on a terminal with the mode in its title', async () => {
    const r = await runCli(['canon', 'verify', wrongFile], { tty: true });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('canon verify: fc.canon.v1, numbers exact');
    const failLine = r.stdout.split('\n').find((l) => l.includes('FAIL'));
    expect(failLine).toContain(String(victim['name']));
    expect(failLine).toContain('wrong-hash.json');
    expect(r.stdout.split('\n').filter((l) => /\bpass\b/.test(l)).length).toBe(shared.vectors.length - 1);
  });

  it('checks errorCode when a vector names one, and canonical text alone', async () => {
    const f = file(
      'codes.json',
      JSON.stringify({
        spec: 'fc.canon.v1',
        vectors: [
          { name: 'right-code', input: '{"a":1,"a":2}', error: true, errorCode: 'DUPLICATE_KEY' },
          { name: 'wrong-code', input: '{"a":1,}', error: true, errorCode: 'SYNTAX' },
          { name: 'not-an-error', input: '[1]', error: true },
          { name: 'canonical-only', input: '[1.50]', canonical: '[1.5]' },
          { name: 'canonical-wrong', input: '[1.50]', canonical: '[1.50]' },
          { name: 'lone-surrogate', input: '["\\udc00"]', canonical: '["\udc00"]' },
          { name: 'bytes', inputBase64: Buffer.from('{"b":0,"a":0}').toString('base64'), canonical: '{"a":0,"b":0}' },
        ],
      }),
    );
    const r = await runCli(['canon', 'verify', f]);
    expect(r.code).toBe(1);
    const byName = Object.fromEntries(
      jsonLines(r.stdout)
        .filter((e) => e['type'] === 'vector')
        .map((e) => [e['name'], e]),
    );
    expect(byName['right-code']).toMatchObject({ result: 'pass', errorCode: 'DUPLICATE_KEY' });
    expect(byName['wrong-code']).toMatchObject({ result: 'fail', errorCode: 'TRAILING_COMMA' });
    expect(String(byName['wrong-code']!['detail'])).toMatch(/^expected error SYNTAX, got TRAILING_COMMA/);
    expect(byName['not-an-error']).toMatchObject({ result: 'fail' });
    expect(byName['canonical-only']).toMatchObject({ result: 'pass' });
    expect(byName['canonical-wrong']).toMatchObject({ result: 'fail' });
    expect(String(byName['canonical-wrong']!['detail'])).toMatch(/canonical text differs at byte 4/);
    // The expected text is compared as hashed bytes: an unpaired surrogate is `?`.
    expect(byName['lone-surrogate']).toMatchObject({ result: 'pass' });
    expect(byName['bytes']).toMatchObject({ result: 'pass' });
  });

  it('--number-mode double is applied and reported', async () => {
    const f = file(
      'double.json',
      JSON.stringify({
        vectors: [
          {
            name: 'long-decimal',
            input: '[0.1000000000000000055511151231257827]',
            canonical: '[0.1000000000000000055511151231257827]',
          },
        ],
      }),
    );
    const exact = await runCli(['canon', 'verify', f]);
    expect(exact.code).toBe(0);
    const double = await runCli(['canon', 'verify', '--number-mode', 'double', f]);
    expect(double.code).toBe(1);
    expect(jsonLines(double.stdout).at(-1)).toMatchObject({ numberMode: 'double', failed: 1 });
  });

  const malformed: Array<[string, string | Buffer, RegExp]> = [
    ['not JSON', '{"vectors": [', /not JSON/],
    ['not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), /not UTF-8/],
    ['no vectors array', '{"spec":"fc.canon.v1"}', /no "vectors" array/],
    ['empty vectors', '{"vectors":[]}', /"vectors" is empty/],
    [
      'another algorithm',
      `{"spec":"jcs","vectors":[{"name":"a","input":"1","hash":"${'0'.repeat(64)}"}]}`,
      /spec is "jcs"/,
    ],
    [
      'both inputs',
      '{"vectors":[{"name":"a","input":"1","inputBase64":"MQ==","canonical":"1"}]}',
      /vector 1 \("a"\): needs exactly one of "input" and "inputBase64"/,
    ],
    ['bad base64', '{"vectors":[{"name":"a","inputBase64":"!!","canonical":"1"}]}', /"inputBase64" must be base64/],
    ['no expectation', '{"vectors":[{"name":"a","input":"1"}]}', /needs "canonical" or "hash"/],
    [
      'unknown errorCode',
      '{"vectors":[{"name":"a","input":"x","error":true,"errorCode":"NOPE"}]}',
      /"errorCode" "NOPE" is not one of/,
    ],
    ['short hash', '{"vectors":[{"name":"a","input":"1","hash":"abc"}]}', /"hash" must be 64 lowercase hex/],
    [
      'duplicate names',
      '{"vectors":[{"name":"a","input":"1","canonical":"1"},{"name":"a","input":"2","canonical":"2"}]}',
      /vector 2 \("a"\): duplicate name/,
    ],
    [
      'error and result',
      `{"vectors":[{"name":"a","input":"1","error":true,"hash":"${'0'.repeat(64)}"}]}`,
      /an error vector has no/,
    ],
  ];
  for (const [what, content, message] of malformed) {
    it(`a malformed vector file (${what}) is exit 2 with one line, before any vector runs`, async () => {
      const bad = file(`bad-${what.replace(/\W+/g, '-')}.json`, content);
      const r = await runCli(['canon', 'verify', fixtureFiles[0]!, bad]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(lines(r.stderr)).toHaveLength(1);
      expect(r.stderr).toMatch(/^fcctl: not a vector file: /);
      expect(r.stderr).toMatch(message);
    });
  }

  it('a missing vector file is exit 2 with one line', async () => {
    const r = await runCli(['canon', 'verify', join(dir, 'absent.json')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`fcctl: cannot read ${join(dir, 'absent.json')}: no such file\n`);
  });

  it('needs at least one file; --number-mode foo is exit 2', async () => {
    expect((await runCli(['canon', 'verify'])).code).toBe(2);
    const r = await runCli(['canon', 'verify', '--number-mode', 'foo', fixtureFiles[0]!]);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/^fcctl: option '--number-mode <mode>' argument 'foo' is invalid/);
  });

  it('library: parseVectorFile and checkVector', () => {
    expect(() => parseVectorFile('[]', 'x.json')).toThrow(VectorFileError);
    const f = parseVectorFile(`{"vectors":[{"name":"n","input":"[1.0]","hash":"${contentHash('[1]')}"}]}`, 'x.json');
    expect(checkVector(f.vectors[0]!, 'exact')).toEqual({
      kind: 'pass',
      detail: `hash ${contentHash('[1]')}`,
      got: { hash: contentHash('[1]') },
    });
  });
});

// ------------------------------------------------------------------------------------ hash

const SEED_INPUT =
  '{"schId":5,"appCode":"demo","code":"honor_apply","submitterId":1001,"subjectId":7,"status":"processed","values":{"a":{"z":1,"y":null},"b":[2,1],"n":100.0,"e":true},"answerNo":null,"createTime":"2026-10-21T10:00:00","updateTime":null}';
const SEED_HASH = 'b1e53847193272b558b4e9f6153b8a0362b2b1c9289580283539aaa227b7b5e6';
const SEED_CANONICAL =
  '{"answerNo":null,"appCode":"demo","code":"honor_apply","createTime":"2026-10-21T10:00:00","schId":5,"status":"processed","subjectId":7,"submitterId":1001,"updateTime":null,"values":{"a":{"y":null,"z":1},"b":[2,1],"e":true,"n":100}}';

describe('canon hash', () => {
  const seedFile = file('seed.json', `${SEED_INPUT}\n`);

  it('hashes a file, `-` and standard input alike', async () => {
    for (const argv of [
      ['canon', 'hash', seedFile],
      ['canon', 'hash', '-'],
      ['canon', 'hash'],
    ]) {
      const r = await runCli(argv, { stdin: SEED_INPUT });
      expect(r).toEqual({ code: 0, stdout: `${SEED_HASH}\n`, stderr: '' });
    }
  });

  it('--canonical prints the exact canonical bytes: no newline when piped, one on a terminal', async () => {
    const piped = await runCli(['canon', 'hash', '--canonical', seedFile]);
    expect(piped).toEqual({ code: 0, stdout: SEED_CANONICAL, stderr: '' });
    const tty = await runCli(['canon', 'hash', '--canonical', seedFile], { tty: true });
    expect(tty.stdout).toBe(`${SEED_CANONICAL}\n`);
    // The built binary, piped: byte-exact, including a raw U+2028 and an unpaired surrogate as `?`.
    const real = await spawnCli(['canon', 'hash', '--canonical'], { stdin: '{"b":"\u2028","a":"\\ud800"}' });
    expect(real.code).toBe(0);
    expect(Buffer.from(real.stdout, 'utf8').equals(Buffer.from('{"a":"?","b":"\u2028"}', 'utf8'))).toBe(true);
  });

  it('--number-mode double reads fractions as doubles; the default is exact', async () => {
    const input = '[0.1000000000000000055511151231257827]';
    expect((await runCli(['canon', 'hash'], { stdin: input })).stdout).toBe(`${contentHash(input)}\n`);
    expect((await runCli(['canon', 'hash', '--number-mode', 'double'], { stdin: input })).stdout).toBe(
      `${contentHash('[0.1]')}\n`,
    );
    expect((await runCli(['canon', 'hash', '--canonical', '--number-mode', 'double'], { stdin: input })).stdout).toBe(
      '[0.1]',
    );
  });

  it('a refused document: exit 2 and exactly `error: CODE: message (line L, column C)`', async () => {
    const r = await runCli(['canon', 'hash'], { stdin: '{\n  "a": 1,\n}' });
    expect(r).toEqual({ code: 2, stdout: '', stderr: "error: TRAILING_COMMA: a ',' before '}' (line 2, column 9)\n" });
    const dup = await runCli(['canon', 'hash', '--canonical'], { stdin: '{"a":1,"a":2}' });
    expect(dup).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: DUPLICATE_KEY: duplicate member name "a" (line 1, column 8)\n',
    });
    const empty = await runCli(['canon', 'hash'], { stdin: '' });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/^error: EMPTY_INPUT: .* \(line 1, column 1\)\n$/);
  });

  it('non-UTF-8 bytes are refused with INVALID_UTF8 and their position', async () => {
    const bad = file('latin1.json', Buffer.from([0x5b, 0x22, 0x63, 0x61, 0x66, 0xe9, 0x22, 0x5d])); // ["café"] in Latin-1
    const r = await runCli(['canon', 'hash', bad]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: INVALID_UTF8: [^\n]+ \(line 1, column 6\)\n$/);
  });

  it('a missing file is exit 2 with one line; so are bad flags', async () => {
    const missing = await runCli(['canon', 'hash', join(dir, 'nope.json')]);
    expect(missing).toEqual({
      code: 2,
      stdout: '',
      stderr: `fcctl: cannot read ${join(dir, 'nope.json')}: no such file\n`,
    });
    const lineMissing = await runCli(['canon', 'hash', '--lines', join(dir, 'nope.json')]);
    expect(lineMissing).toEqual({
      code: 2,
      stdout: '',
      stderr: `fcctl: cannot read ${join(dir, 'nope.json')}: no such file\n`,
    });
    const dirInput = await runCli(['canon', 'hash', dir]);
    expect(dirInput.code).toBe(2);
    expect(dirInput.stderr).toBe(`fcctl: cannot read ${dir}: is a directory\n`);
    const mode = await runCli(['canon', 'hash', '--number-mode', 'foo', seedFile]);
    expect(mode.code).toBe(2);
    expect(lines(mode.stderr)).toHaveLength(1);
    const max = await runCli(['canon', 'hash', '--lines', '--max-line-bytes', '0', seedFile]);
    expect(max.code).toBe(2);
    expect(lines(max.stderr)).toHaveLength(1);
  });
});

describe('canon hash --lines', () => {
  it('prints exactly one line per input line, in order, and exits 1 when any failed', async () => {
    const input = [
      SEED_INPUT, // 1 ok
      '', // 2 empty line: EMPTY_INPUT
      '{"a":1,}\r', // 3 CRLF, refused
      '[1]\r', // 4 CRLF: same hash as [1]
      '   ', // 5 blank: EMPTY_INPUT
      '{"b":2,"a":1}', // 6 ok
      '[1', // 7 unterminated
      '[2]', // 8 last line, no LF
    ].join('\n');
    const r = await runCli(['canon', 'hash', '--lines'], { stdin: input });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('');
    expect(lines(r.stdout)).toEqual([
      SEED_HASH,
      'error\tEMPTY_INPUT\tno JSON value in the input (column 1)',
      "error\tTRAILING_COMMA\ta ',' before '}' (column 7)",
      contentHash('[1]'),
      'error\tEMPTY_INPUT\tno JSON value in the input (column 4)',
      contentHash('{"a":1,"b":2}'),
      expect.stringMatching(/^error\tUNTERMINATED\t[^\t]+ \(column 1\)$/),
      contentHash('[2]'),
    ]);
  });

  it('exits 0 when every line hashes; an empty input prints nothing; a final LF adds no line', async () => {
    const ok = await runCli(['canon', 'hash', '--lines'], { stdin: '[1]\n[2]\n' });
    expect(ok).toEqual({ code: 0, stdout: `${contentHash('[1]')}\n${contentHash('[2]')}\n`, stderr: '' });
    expect(await runCli(['canon', 'hash', '--lines'], { stdin: '' })).toEqual({ code: 0, stdout: '', stderr: '' });
    const one = await runCli(['canon', 'hash', '--lines'], { stdin: '\n' });
    expect(one).toEqual({ code: 1, stdout: 'error\tEMPTY_INPUT\tno JSON value in the input (column 1)\n', stderr: '' });
  });

  it('--lines --canonical prints canonical text per line; --number-mode applies', async () => {
    const r = await runCli(['canon', 'hash', '--lines', '--canonical'], {
      stdin: '{"b":1.50,"a":null}\nNaN\n[0.1000000000000000055511151231257827]\n',
    });
    expect(lines(r.stdout)).toEqual([
      '{"a":null,"b":1.5}',
      'error\tNOT_A_NUMBER\tNaN is not a JSON number (column 1)',
      '[0.1000000000000000055511151231257827]',
    ]);
    const d = await runCli(['canon', 'hash', '--lines', '--canonical', '--number-mode', 'double'], {
      stdin: '[0.1000000000000000055511151231257827]\n',
    });
    expect(d.stdout).toBe('[0.1]\n');
  });

  it('a line over --max-line-bytes is an error line, skipped; the lines after it still hash', async () => {
    const long = `[${'1,'.repeat(100)}1]`;
    const r = await runCli(['canon', 'hash', '--lines', '--max-line-bytes', '100'], { stdin: `[1]\n${long}\n[2]\n` });
    expect(r.code).toBe(1);
    expect(lines(r.stdout)).toEqual([
      contentHash('[1]'),
      `error\tLINE_TOO_LONG\ta line of ${long.length} bytes is over the 100-byte limit (--max-line-bytes)`,
      contentHash('[2]'),
    ]);
  });

  it('the built binary: invalid UTF-8 on one line, a file argument, many lines across chunks', async () => {
    const bytes = Buffer.concat([Buffer.from('[1]\n["'), Buffer.from([0xc3, 0x28]), Buffer.from('"]\n[2]\n')]);
    const r = await spawnCli(['canon', 'hash', '--lines'], { stdin: bytes });
    expect(r.code).toBe(1);
    expect(lines(r.stdout)).toEqual([
      contentHash('[1]'),
      'error\tINVALID_UTF8\tthe input is not well-formed UTF-8 (column 3)',
      contentHash('[2]'),
    ]);

    // 30,000 lines of varied length (about 3 MB) from a file: several read chunks, lines cut across them.
    const docs = Array.from({ length: 30_000 }, (_, i) =>
      i % 997 === 0 ? '{"bad":}' : `{"i":${i},"pad":"${'é'.repeat(i % 150)}","n":${i}.50}`,
    );
    const big = file('many.jsonl', `${docs.join('\r\n')}\r\n`);
    const many = await spawnCli(['canon', 'hash', '--lines', big]);
    expect(many.code).toBe(1);
    const out = lines(many.stdout);
    expect(out).toHaveLength(docs.length);
    for (const i of [0, 1, 2, 996, 997, 998, 12_345, 29_999]) {
      expect(out[i]).toBe(
        i % 997 === 0 ? "error\tSYNTAX\tunexpected '}', expected a value (column 8)" : contentHash(docs[i]!),
      );
    }
  });
  it('an interrupt ends a waiting read at once: what was read is printed, exit 1 and one stderr line', async () => {
    const stdin = new PassThrough();
    const t = testIo({ stdin });
    const controller = new AbortController();
    const running = main(['canon', 'hash', '--lines'], {
      io: t.io,
      env: cleanEnv(),
      now: () => new Date(),
      signal: controller.signal,
    });
    stdin.write('[1]\n[2]\n[3'); // the third line is still open: standard input stays quiet
    while (t.stdout().split('\n').length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    expect(await running).toBe(1);
    expect(t.stdout()).toBe(`${contentHash('[1]')}\n${contentHash('[2]')}\n`);
    expect(t.stderr()).toBe('fcctl: canon hash --lines: interrupted after 2 lines; the output is incomplete\n');
  });
});

describe('LineSplitter', () => {
  const collect = (input: Buffer, chunkSizes: number[], max = 1 << 20): LineEvent[] => {
    const s = new LineSplitter(max);
    const out: LineEvent[] = [];
    let pos = 0;
    let k = 0;
    while (pos < input.length) {
      const n = chunkSizes[k++ % chunkSizes.length]!;
      s.push(input.subarray(pos, pos + n), (e) => out.push(e));
      pos += n;
    }
    s.end((e) => out.push(e));
    return out;
  };
  const text = (events: LineEvent[]) =>
    events.map((e) => (e.kind === 'line' ? e.bytes.toString('utf8') : `<overlong ${e.bytes}>`));

  it('gives the same lines whatever the chunking', () => {
    const input = Buffer.from('a\r\n\nbc\r\rd\n\r\nlast');
    const expected = ['a', '', 'bc\r\rd', '', 'last'];
    for (const sizes of [[1], [2], [3], [1, 5], [input.length], [4, 1, 2]])
      expect(text(collect(input, sizes))).toEqual(expected);
  });

  it('drops an over-long line as it streams and reports its size', () => {
    const input = Buffer.from(`ok\n${'x'.repeat(50)}\nfine\n${'y'.repeat(11)}`);
    for (const sizes of [[1], [7], [3, 20], [input.length]]) {
      expect(text(collect(input, sizes, 10))).toEqual(['ok', '<overlong 50>', 'fine', '<overlong 11>']);
    }
  });

  it('validates its limit', () => {
    expect(() => new LineSplitter(0)).toThrow(TypeError);
  });
});

describe('BufferedWriter', () => {
  it('waits for drain when the stream is full, and keeps the order', async () => {
    const received: string[] = [];
    let drains = 0;
    const slow = new Writable({
      highWaterMark: 16,
      write(chunk: Buffer, _enc, cb) {
        received.push(chunk.toString());
        setTimeout(cb, 1);
      },
    });
    slow.on('drain', () => drains++);
    const w = new BufferedWriter(slow, 8);
    for (let i = 0; i < 50; i++) {
      w.write(`line ${i}\n`);
      await w.flushIfFull();
      // Never more than one block beyond the stream's limit is queued.
      expect(slow.writableLength).toBeLessThanOrEqual(16 + 8 + 10);
    }
    await w.flush();
    await new Promise((resolve) => slow.end(resolve));
    expect(received.join('')).toBe(Array.from({ length: 50 }, (_, i) => `line ${i}\n`).join(''));
    expect(drains).toBeGreaterThan(0);
  });

  it('stops quietly when the reader goes away (EPIPE)', async () => {
    const sink = new Writable({ write: (_c, _e, cb) => cb() });
    const w = new BufferedWriter(sink);
    sink.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    expect(w.closed).toBe(true);
    w.write('x');
    await w.flush();
    expect(w.buffered).toBe(0);
  });
});

// ------------------------------------------------------------------------------------ check-envelope

const SNAPSHOT =
  '{"schId":5,"appCode":"demo","code":"honor_apply","submitterId":1001,"subjectId":7,"status":"processed","values":{"name":"张三","n":12.50,"big":9007199254740993,"items":[1,2]},"answerNo":null,"createTime":"2026-10-21T10:00:00","updateTime":null}';

/** The service's zone the envelopes are built in (occurredAt's offset; check-envelope accepts any). */
const ZONE = 'Asia/Shanghai';

function row(over: Partial<DeliveryRow> = {}): DeliveryRow {
  const snapshot = over.snapshot_json ?? SNAPSHOT;
  return {
    id: '1',
    event_id: '0f0e0d0c-0000-4000-8000-0000000000aa',
    event_type: 'created',
    source_app_key: '100021',
    consumer_app_key: '100100',
    consumer_school_id: '5',
    grant_version: '2',
    form_uuid: '0f0e0d0c-0000-4000-8000-000000000001',
    form_version: 3,
    answer_uuid: '0f0e0d0c-0000-4000-8000-0000000000bb',
    answer_revision: '1',
    is_deleted: 0,
    content_hash: contentHash(snapshot),
    occurred_at: '2026-10-21 10:05:00',
    snapshot_json: snapshot,
    state: 'PENDING',
    retry_count: 0,
    replay_op_digest: null,
    ...over,
  };
}

/** The envelope's members as raw JSON texts (the snapshot kept byte for byte), to edit and re-join. */
function members(body: Buffer, snapshot: string): Array<[string, string]> {
  const parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  return Object.keys(parsed).map((k) => [k, k === 'snapshot' ? snapshot : JSON.stringify(parsed[k])]);
}
const join_ = (entries: Array<[string, string]>) =>
  `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
/** A valid envelope with members replaced (raw JSON text), removed (undefined) or added. */
function edited(changes: Record<string, string | undefined>, base = row()): string {
  const entries = members(buildEnvelope(base, ZONE), String(base.snapshot_json)).filter(
    ([k]) => !(k in changes) || changes[k] !== undefined,
  );
  const out = entries.map(([k, v]): [string, string] => [k, k in changes ? changes[k]! : v]);
  for (const [k, v] of Object.entries(changes))
    if (v !== undefined && !entries.some(([name]) => name === k)) out.push([k, v]);
  return join_(out);
}

async function check(body: string | Buffer) {
  const r = await runCli(['canon', 'check-envelope', file(`env-${Math.random().toString(36).slice(2)}.json`, body)]);
  const out = jsonLines(r.stdout);
  return { ...r, problems: out.filter((e) => e['type'] === 'problem'), summary: out.at(-1)! };
}

describe('canon check-envelope', () => {
  it('accepts an envelope built by buildEnvelope: exit 0, no problem, routing key and hash', async () => {
    const body = buildEnvelope(row(), ZONE);
    const r = await check(body);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.problems).toEqual([]);
    expect(r.summary).toMatchObject({
      command: 'canon check-envelope',
      exitCode: 0,
      problems: 0,
      algorithm: 'fc.canon.v1',
      numberMode: 'exact',
      routingKey: 'fc.snapshot.v2.100100.5',
      recomputedHash: contentHash(SNAPSHOT),
    });
    // Standard input, and a snapshot carrying `intent` for the target consumer.
    const withIntent = SNAPSHOT.replace(/}$/, ',"intent":{"op":"x"}}');
    const stdin = await runCli(['canon', 'check-envelope'], {
      stdin: buildEnvelope(row({ snapshot_json: withIntent, content_hash: contentHash(withIntent) }), ZONE).toString(
        'utf8',
      ),
    });
    expect(stdin.code).toBe(0);
  });

  const cases: Array<[string, () => string, EnvelopeProblemCode, RegExp]> = [
    ['an extra member', () => edited({ debug: 'true' }), 'EXTRA_MEMBER', /"debug" is not in the closed set of 15/],
    ['a missing member', () => edited({ answerRevision: undefined }), 'MISSING_MEMBER', /"answerRevision" is missing/],
    [
      'a duplicate member',
      () => edited({}).replace(/}$/, ',"eventId":"other"}'),
      'DUPLICATE_MEMBER',
      /"eventId" appears more than once/,
    ],
    [
      'a tampered hash',
      () => buildEnvelope(row({ content_hash: contentHash('{}') }), ZONE).toString('utf8'),
      'SNAPSHOT_HASH_MISMATCH',
      /is not the snapshot's hash/,
    ],
    // 9007199254740993 → …992 is the same JS number: only an exact hash over the raw bytes sees it.
    [
      'a snapshot changed beyond 2^53',
      () => edited({ snapshot: SNAPSHOT.replace('9007199254740993', '9007199254740992') }),
      'SNAPSHOT_HASH_MISMATCH',
      /is not the snapshot's hash/,
    ],
    [
      'a dotted app key',
      () => buildEnvelope(row({ consumer_app_key: 'fault.dotted' }), ZONE).toString('utf8'),
      'INVALID_ROUTING_KEY',
      /consumer app key "fault.dotted"/,
    ],
    [
      'a wildcard app key',
      () => buildEnvelope(row({ consumer_app_key: 'fault*wild' }), ZONE).toString('utf8'),
      'INVALID_ROUTING_KEY',
      /consumer app key "fault\*wild"/,
    ],
    [
      'school 0',
      () => buildEnvelope(row({ consumer_school_id: '0' }), ZONE).toString('utf8'),
      'INVALID_ROUTING_KEY',
      /school id "0" is not a positive integer/,
    ],
    [
      'a string school id',
      () => edited({ consumerSchoolId: '"5"' }),
      'INVALID_MEMBER',
      /^consumerSchoolId must be a positive integer, got "5"$/,
    ],
    [
      'a number event id',
      () => edited({ eventId: '12' }),
      'INVALID_MEMBER',
      /^eventId must be a string of 1 to 36 characters, got 12$/,
    ],
    [
      'a 37-character event id',
      () => edited({ eventId: JSON.stringify('x'.repeat(37)) }),
      'INVALID_MEMBER',
      /^eventId must be a string of 1 to 36/,
    ],
    [
      'a fractional grant version',
      () => edited({ grantVersion: '1.5' }),
      'INVALID_MEMBER',
      /^grantVersion must be an integer \(64-bit\), got 1\.5$/,
    ],
    [
      'a revision beyond 64 bits',
      () => edited({ answerRevision: '9223372036854775808' }),
      'INVALID_MEMBER',
      /^answerRevision must be an integer/,
    ],
    [
      'isDeleted as a number',
      () => edited({ isDeleted: '0' }),
      'INVALID_MEMBER',
      /^isDeleted must be true or false, got 0$/,
    ],
    [
      'an unknown event type',
      () => edited({ eventType: '"deleted"' }),
      'INVALID_MEMBER',
      /^eventType must be one of created, updated, tombstoned/,
    ],
    [
      'another protocol version',
      () => edited({ protocolVersion: '"fc.answer.snapshot.v1"' }),
      'INVALID_MEMBER',
      /^protocolVersion must be "fc.answer.snapshot.v2"/,
    ],
    [
      'an uppercase hash',
      () => edited({ contentHash: JSON.stringify(contentHash(SNAPSHOT).toUpperCase()) }),
      'INVALID_MEMBER',
      /^contentHash must be 64 lowercase hex digits/,
    ],
    [
      'a snapshot member too many',
      () => {
        const s = SNAPSHOT.replace(/}$/, ',"extra":1}');
        return buildEnvelope(row({ snapshot_json: s, content_hash: contentHash(s) }), ZONE).toString('utf8');
      },
      'SNAPSHOT_INVALID',
      /not the closed set of ten/,
    ],
    [
      'a snapshot member missing',
      () => {
        const s = SNAPSHOT.replace('"answerNo":null,', '');
        return buildEnvelope(row({ snapshot_json: s, content_hash: contentHash(s) }), ZONE).toString('utf8');
      },
      'SNAPSHOT_INVALID',
      /not the closed set of ten/,
    ],
    [
      'a snapshot that is an array',
      () => edited({ snapshot: '[1]' }),
      'SNAPSHOT_INVALID',
      /snapshot must be a JSON object, got \[1\]/,
    ],
    [
      'a snapshot with a duplicate name',
      () => edited({ snapshot: SNAPSHOT.replace('"schId":5', '"schId":5,"schId":6') }),
      'SNAPSHOT_INVALID',
      /^DUPLICATE_KEY: /,
    ],
    ['a JSON array', () => '[1,2]', 'NOT_AN_OBJECT', /not a JSON object/],
  ];
  for (const [what, body, code, detail] of cases) {
    it(`${what}: exit 1 with ${code}`, async () => {
      const r = await check(body());
      expect(r.code).toBe(1);
      expect(r.stderr).toBe('');
      const p = r.problems.find((x) => x['code'] === code);
      expect(p, JSON.stringify(r.problems)).toBeDefined();
      expect(String(p!['detail'])).toMatch(detail);
      expect(r.summary).toMatchObject({ type: 'summary', exitCode: 1, problems: r.problems.length });
    });
  }

  it('reports every problem, one line each, on a terminal as `CODE: detail`', async () => {
    const body = edited(
      { debug: '1', formVersion: undefined, isDeleted: '"no"' },
      row({ consumer_app_key: 'a b', consumer_school_id: '0' }),
    );
    const r = await runCli(['canon', 'check-envelope', file('many-problems.json', body)], { tty: true });
    expect(r.code).toBe(1);
    const problemLines = r.stdout.split('\n').filter((l) => /^[A-Z_]+: /.test(l));
    expect(problemLines).toEqual([
      'MISSING_MEMBER: member "formVersion" is missing',
      'EXTRA_MEMBER: member "debug" is not in the closed set of 15',
      'INVALID_MEMBER: isDeleted must be true or false, got "no"',
      'INVALID_ROUTING_KEY: consumer app key "a b" is empty or holds . * # or whitespace',
      'INVALID_ROUTING_KEY: consumer school id "0" is not a positive integer',
    ]);
  });

  it('input that is not JSON at all is exit 2 with one line', async () => {
    for (const [body, message] of [
      ['{"eventId": ', /is not JSON: UNTERMINATED: .* \(line 1, column 1\)$/],
      ['', /is not JSON: EMPTY_INPUT: /],
      ['{"a":1} trailing', /is not JSON: TRAILING_DATA: .* \(line 1, column 9\)$/],
      [
        Buffer.concat([Buffer.from('{"eventId":"'), Buffer.from([0xff]), Buffer.from('"}')]),
        /is not JSON: INVALID_UTF8: .* \(line 1, column 13\)$/,
      ],
    ] as Array<[string | Buffer, RegExp]>) {
      const r = await check(body);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(lines(r.stderr)).toHaveLength(1);
      expect(r.stderr.trimEnd()).toMatch(/^fcctl: /);
      expect(r.stderr.trimEnd()).toMatch(message);
    }
    // A duplicate name inside the snapshot and a later syntax error: still "not JSON", not DUPLICATE_KEY.
    const r = await check('{"snapshot":{"a":1,"a":2},');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/is not JSON: SYNTAX: /);
    const missing = await runCli(['canon', 'check-envelope', join(dir, 'none.json')]);
    expect(missing).toEqual({
      code: 2,
      stdout: '',
      stderr: `fcctl: cannot read ${join(dir, 'none.json')}: no such file\n`,
    });
  });

  it('library: checkEnvelope returns the checked values, integers as text and the snapshot byte for byte', () => {
    const r = checkEnvelope(buildEnvelope(row({ grant_version: '9223372036854775807' }), ZONE));
    expectTypeOf(r).toEqualTypeOf<EnvelopeCheck>();
    expect(r.kind).toBe('checked');
    if (r.kind !== 'checked') return;
    expect(r.problems).toEqual([]);
    expect(r.envelope).toMatchObject({
      grantVersion: '9223372036854775807',
      formVersion: '3',
      isDeleted: false,
      snapshotJson: SNAPSHOT,
      routingKey: 'fc.snapshot.v2.100100.5',
    });
    expect(ENVELOPE_MEMBERS).toHaveLength(15);
    expect(checkEnvelope(Buffer.from('nope')).kind).toBe('not-json');
  });
});
