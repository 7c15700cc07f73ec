import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Db, openDb } from '../../src/lib/db/connect.js';
import { processStartTicks } from '../../src/lib/files/lock.js';
import { runManifestScan } from '../../src/lib/manifest/scan/run.js';
import { FCCTL_BIN, jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';
import { insertProjections, testUuid } from '../helpers/manifest.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'mscan', init: 'sh' });

const FORM = testUuid('scan', 'form');
const ROWS = 3000;
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;
let reference: Buffer;

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const scanArgs = (out: string, extra: string[] = []) => [
  '--json',
  'manifest',
  'scan',
  '--side',
  'sh',
  '--school',
  '5',
  '--form',
  FORM,
  '--out',
  out,
  ...extra,
];
const scan = (out: string, extra: string[] = []) => runCli(scanArgs(out, extra), { env });
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const cpOf = (out: string) => out.replace(/\.jsonl$/, '.checkpoint.json');
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  env = dbs.env();
  await insertProjections(dbs.admin, dbs.shName, [
    ...Array.from({ length: ROWS }, (_, i) => ({
      answerUuid: testUuid('scan', i),
      formUuid: FORM,
      revision: 1 + (i % 3),
      createTime: i % 50 === 0 ? null : '2026-10-01 08:00:00',
      retiredAt: i % 97 === 0 ? '2026-11-01 00:00:00' : null,
    })),
    ...Array.from({ length: 50 }, (_, i) => ({ answerUuid: testUuid('scan-other', i), formUuid: FORM, schId: 6 })),
  ]);
  dir = tmp;
  const r = await scan(join(dir, 'reference.jsonl'), ['--size', '500']);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  reference = readFileSync(join(dir, 'reference.jsonl'));
});

describe('manifest scan', () => {
  it("writes every row once, sorted, and (3000 rows by 500: six pages, the sixth knows it is the last) a completed checkpoint with the file's length, rows and SHA-256", async () => {
    const lines = reference.toString('utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(ROWS);
    const uuids = lines.map((l) => (JSON.parse(l) as { answerUuid: string }).answerUuid);
    expect(uuids).toEqual([...uuids].sort());
    expect(new Set(uuids).size).toBe(ROWS);
    const cp = readJson(join(dir, 'reference.checkpoint.json'));
    expect(cp).toMatchObject({
      format: 'fcctl.manifest.checkpoint.v1',
      completed: true,
      rows: ROWS,
      pages: 6,
      outputBytes: reference.length,
      sha256: sha(reference),
      size: 500,
    });
    expect(cp['params']).toMatchObject({
      side: 'sh',
      schId: '5',
      formUuid: FORM,
      shard: null,
      out: join(dir, 'reference.jsonl'),
    });
    expect(typeof cp['completedAt']).toBe('string');
    // the lock is gone, no temp files are left
    expect(readdirSync(dir).filter((f) => f.startsWith('reference'))).toEqual([
      'reference.checkpoint.json',
      'reference.jsonl',
    ]);
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp') || f.endsWith('.lock'))).toEqual([]);
  });

  it('the page size changes nothing in the bytes', async () => {
    const out = join(dir, 'small-pages.jsonl');
    const r = await scan(out, ['--size', '7']);
    expect(r.code).toBe(0);
    expect(readFileSync(out).equals(reference)).toBe(true);
    expect(summaryOf(r.stdout)).toMatchObject({
      completed: true,
      rows: ROWS,
      pages: Math.ceil(ROWS / 7),
      sha256: sha(reference),
    });
  });

  it('a rerun of a completed scan reads nothing and changes nothing; --restart scans again to the same bytes', async () => {
    const out = join(dir, 'reference.jsonl');
    const before = readFileSync(cpOf(out), 'utf8');
    const again = await scan(out, ['--size', '500']);
    expect(again.code).toBe(0);
    expect(summaryOf(again.stdout)).toMatchObject({ alreadyComplete: true, resumed: true, rowsThisRun: 0, rows: ROWS });
    expect(readFileSync(cpOf(out), 'utf8')).toBe(before);
    const restarted = await scan(out, ['--restart']);
    expect(restarted.code).toBe(0);
    expect(summaryOf(restarted.stdout)).toMatchObject({ restarted: true, resumed: false, rowsThisRun: ROWS });
    expect(readFileSync(out).equals(reference)).toBe(true);
  });

  it('shards 1..n concatenated in order are byte-identical to the unsharded scan', async () => {
    const parts: Buffer[] = [];
    for (let i = 1; i <= 3; i++) {
      const out = join(dir, `shard-${i}.jsonl`);
      const r = await scan(out, ['--shard', `${i}/3`, '--size', '200']);
      expect(r.code).toBe(0);
      expect(summaryOf(r.stdout)).toMatchObject({ shard: `${i}/3`, completed: true });
      parts.push(readFileSync(out));
      expect(parts.at(-1)!.length).toBeGreaterThan(0);
    }
    expect(Buffer.concat(parts).equals(reference)).toBe(true);
  });

  it('a checkpoint from other arguments → exit 4, one line, output and checkpoint untouched; --restart takes it over', async () => {
    const out = join(dir, 'args.jsonl');
    expect((await scan(out)).code).toBe(0);
    const outBefore = readFileSync(out);
    const cpBefore = readFileSync(cpOf(out), 'utf8');
    for (const other of [
      ['--side', 'sh', '--school', '6', '--form', FORM],
      ['--side', 'sh', '--school', '5', '--form', testUuid('scan', 'another form')],
      ['--side', 'fc', '--school', '5', '--form', FORM],
    ]) {
      const r = await runCli(['--json', 'manifest', 'scan', ...other, '--out', out], { env });
      expect(r.code).toBe(4);
      expect(r.stderr).toMatch(/^fcctl: checkpoint .* belongs to another scan .*--restart[^\n]*\n$/);
      expect(r.stdout).toBe('');
    }
    // the same checkpoint with another output file, or another shard
    const moved = await scan(join(dir, 'args-elsewhere.jsonl'), ['--checkpoint', cpOf(out)]);
    expect(moved.code).toBe(4);
    expect((await scan(out, ['--shard', '1/2'])).code).toBe(4);
    expect(existsSync(join(dir, 'args-elsewhere.jsonl'))).toBe(false);
    expect(readFileSync(out).equals(outBefore)).toBe(true);
    expect(readFileSync(cpOf(out), 'utf8')).toBe(cpBefore);

    const r = await runCli(
      ['--json', 'manifest', 'scan', '--side', 'sh', '--school', '6', '--form', FORM, '--out', out, '--restart'],
      { env },
    );
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ rows: 50, restarted: true });
  });

  it('resumes a scan whose output holds a page written after its last checkpoint: cuts it, continues, same bytes', async () => {
    const out = join(dir, 'resume.jsonl');
    // A finished scan rolled back to "killed after the page 3 write, before its checkpoint".
    expect((await scan(out, ['--size', '500'])).code).toBe(0);
    const cp = readJson(cpOf(out));
    const prefix = reference.subarray(0, nthLineEnd(reference, 1000));
    writeFileSync(
      cpOf(out),
      `${JSON.stringify({ ...cp, completed: false, completedAt: null, pages: 2, rows: 1000, outputBytes: prefix.length, cursor: lastUuid(prefix), sha256: sha(prefix) })}\n`,
    );
    truncateSync(out, nthLineEnd(reference, 1500) - 17); // and half a line of the next page
    const r = await scan(out);
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({
      resumed: true,
      rowsThisRun: ROWS - 1000,
      truncatedBytes: nthLineEnd(reference, 1500) - 17 - prefix.length,
      completed: true,
    });
    expect(readFileSync(out).equals(reference)).toBe(true);
  });

  it('resumes from a fresh checkpoint whose output was never created (killed right after the checkpoint)', async () => {
    const out = join(dir, 'fresh-kill.jsonl');
    expect((await scan(out)).code).toBe(0);
    const cp = readJson(cpOf(out));
    writeFileSync(
      cpOf(out),
      `${JSON.stringify({ ...cp, completed: false, completedAt: null, pages: 0, rows: 0, outputBytes: 0, cursor: null, sha256: sha(Buffer.alloc(0)) })}\n`,
    );
    rmSync(out);
    const r = await scan(out);
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ resumed: true, rowsThisRun: ROWS });
    expect(readFileSync(out).equals(reference)).toBe(true);
  });

  it('refuses (exit 4) to resume over an output shorter than its checkpoint, or whose checkpointed bytes changed', async () => {
    const out = join(dir, 'damaged.jsonl');
    expect((await scan(out)).code).toBe(0);
    const cp = readJson(cpOf(out));
    writeFileSync(cpOf(out), `${JSON.stringify({ ...cp, completed: false, completedAt: null })}\n`);
    truncateSync(out, reference.length - 1);
    const short = await scan(out);
    expect(short.code).toBe(4);
    expect(short.stderr).toMatch(/shorter than the \d+ bytes its checkpoint records/);
    const changed = Buffer.from(reference);
    changed[10] = changed[10] === 0x61 ? 0x62 : 0x61;
    writeFileSync(out, changed);
    const r = await scan(out);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/changed since they were checkpointed/);
    expect(readFileSync(out).equals(changed)).toBe(true);
  });

  it("a lock held by a live process → exit 4 naming it; a dead holder's lock is taken over", async () => {
    const out = join(dir, 'locked.jsonl');
    const lock = `${cpOf(out)}.lock`;
    writeFileSync(
      lock,
      JSON.stringify({
        host: hostname(),
        pid: process.pid,
        startTicks: processStartTicks('self'),
        nonce: 'n1',
        startedAt: 'then',
        command: 'manifest scan',
      }),
    );
    const r = await scan(out);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(
      new RegExp(`^fcctl: checkpoint .* is held by a running manifest scan \\(pid ${process.pid},[^\\n]*\\n$`),
    );
    expect(existsSync(out)).toBe(false);
    // A reused pid (alive, but started at another time) is a dead holder.
    writeFileSync(
      lock,
      JSON.stringify({
        host: hostname(),
        pid: process.pid,
        startTicks: '1',
        nonce: 'n2',
        startedAt: 'then',
        command: 'manifest scan',
      }),
    );
    const reused = await scan(out);
    expect(reused.code).toBe(0);
    expect(readFileSync(out).equals(reference)).toBe(true);
    expect(existsSync(lock)).toBe(false);
    // A holder that exited (kill -9 leaves its lock behind) is a dead holder.
    const gone = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => gone.on('close', resolve));
    writeFileSync(
      lock,
      JSON.stringify({
        host: hostname(),
        pid: gone.pid,
        startTicks: null,
        nonce: 'n4',
        startedAt: 'then',
        command: 'manifest scan',
      }),
    );
    const taken = await scan(out, ['--restart']);
    expect(taken.code).toBe(0);
    expect(readFileSync(out).equals(reference)).toBe(true);
    expect(existsSync(lock)).toBe(false);
    // A lock from another host is never taken over.
    writeFileSync(
      lock,
      JSON.stringify({
        host: `${hostname()}-elsewhere`,
        pid: 1,
        startTicks: null,
        nonce: 'n3',
        startedAt: 'then',
        command: 'manifest scan',
      }),
    );
    const remote = await scan(out, ['--restart']);
    expect(remote.code).toBe(4);
    expect(remote.stderr).toMatch(/on host .*-elsewhere/);
    rmSync(lock);
  });

  it('a second scan while a real one runs → exit 4; SIGINT stops the first cleanly (exit 1), a rerun completes it', async () => {
    const out = join(dir, 'live.jsonl');
    const child = spawn(process.execPath, [FCCTL_BIN, ...scanArgs(out, ['--size', '1'])], {
      env: env as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await waitFor(
      'the first scan to write its checkpoint',
      async () => existsSync(cpOf(out)) && readJson(cpOf(out))['rows'] !== 0,
      30_000,
      5,
    );
    const second = await scan(out);
    expect(second.code).toBe(4);
    expect(second.stderr).toMatch(new RegExp(`held by a running manifest scan \\(pid ${child.pid},`));
    child.kill('SIGINT');
    expect(await exited).toBe(1);
    const stopped = summaryOf(stdout);
    expect(stopped).toMatchObject({ completed: false, stoppedBy: 'signal', exitCode: 1 });
    expect(Number(stopped['rows'])).toBeGreaterThan(0);
    expect(Number(stopped['rows'])).toBeLessThan(ROWS);
    const rest = await scan(out, ['--size', '500']);
    expect(rest.code).toBe(0);
    expect(summaryOf(rest.stdout)).toMatchObject({ resumed: true, rowsThisRun: ROWS - Number(stopped['rows']) });
    expect(readFileSync(out).equals(reference)).toBe(true);
  });

  it('a planned range that grew before it was read (rows inserted meanwhile) is read to its end: every row, in order', async () => {
    const form = testUuid('scan', 'growing form');
    const keys = Array.from({ length: 1000 }, (_, i) => testUuid('scan', 'growing', i)).sort();
    await insertProjections(
      dbs.admin,
      dbs.shName,
      keys.map((k) => ({ answerUuid: k, formUuid: form })),
    );
    const db = await openDb('SH database', dbs.shUrl);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // Page queries of planned ranges after the first wait until the test has inserted rows into
    // one. (Page rows are streamed on a connection of the driver's core pool; boundary queries use db.query.)
    const core = db.pool.pool;
    const gatedCore = {
      getConnection: (cb: (err: unknown, conn?: unknown) => void) =>
        core.getConnection((err, conn) => {
          if (err) return cb(err);
          const query = (sql: string, params: unknown[]) => {
            if (!(/answer_uuid > \?/.test(sql) && /answer_uuid <= \?/.test(sql))) return conn.query(sql, params);
            const relay = new EventEmitter();
            void gate.then(() => {
              const q = conn.query(sql, params);
              for (const event of ['result', 'error', 'end']) q.on(event, (x: unknown) => relay.emit(event, x));
            });
            return relay;
          };
          cb(null, {
            query,
            on: conn.on.bind(conn),
            removeListener: conn.removeListener.bind(conn),
            release: () => conn.release(),
            destroy: () => conn.destroy(),
          });
        }),
    };
    const gated: Db = { ...db, pool: { pool: gatedCore } as unknown as Db['pool'] };
    const added = Array.from({ length: 150 }, (_, i) => testUuid('scan', 'growing-added', i)).filter(
      (k) => k > keys[99]! && k <= keys[199]!,
    );
    expect(added.length).toBeGreaterThan(0);
    const out = join(dir, 'growing.jsonl');
    try {
      const r = await runManifestScan(
        {
          side: 'sh',
          schId: '5',
          formUuid: form,
          shard: null,
          size: 100,
          out,
          checkpoint: cpOf(out),
          restart: false,
          database: 'test',
        },
        {
          db: gated,
          signal: new AbortController().signal,
          onPage: async (p) => {
            if (p.page === 1) {
              // into the second range, (key 100, key 200], already planned
              await insertProjections(
                dbs.admin,
                dbs.shName,
                added.map((k) => ({ answerUuid: k, formUuid: form })),
              );
              release();
            }
          },
        },
      );
      expect(r.checkpoint).toMatchObject({
        completed: true,
        rows: 1000 + added.length,
        pages: 10 + Math.ceil(added.length / 100),
      });
    } finally {
      release();
      await db.close();
    }
    const uuids = readFileSync(out, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { answerUuid: string }).answerUuid);
    expect(uuids).toEqual([...keys, ...added].sort());
  });

  it.each([
    [['--size', '501']],
    [['--school', '0']],
    [['--form', 'nope']],
    [['--shard', '3/2']],
    [['--shard', '1-2']],
    [['--side', 'xx']],
  ])('bad input %j: exit 2, one line, nothing written', async (args) => {
    const out = join(dir, 'bad.jsonl');
    const base: Record<string, string> = { '--side': 'sh', '--school': '5', '--form': FORM, '--out': out };
    for (let i = 0; i < args.length; i += 2) base[args[i]!] = args[i + 1]!;
    const r = await runCli(['--json', 'manifest', 'scan', ...Object.entries(base).flat()], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^fcctl: [^\n]+\n$/);
    expect(r.stdout).toBe('');
    expect(readdirSync(dir).filter((f) => f.startsWith('bad'))).toEqual([]);
  });

  it('an output directory that does not exist: exit 2 before connecting, nothing written', async () => {
    const r = await runCli(scanArgs(join(dir, 'missing', 'x.jsonl')), {
      env: { ...env, FCCTL_SH_DATABASE_URL: 'mysql://nobody@127.0.0.1:1/none' },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^fcctl: --out .*: directory .*missing does not exist\n$/);
  });
});

function nthLineEnd(buf: Buffer, n: number): number {
  let at = -1;
  for (let i = 0; i < n; i++) at = buf.indexOf(0x0a, at + 1);
  return at + 1;
}
function lastUuid(prefix: Buffer): string {
  const lines = prefix.toString('utf8').trimEnd().split('\n');
  return (JSON.parse(lines.at(-1)!) as { answerUuid: string }).answerUuid;
}
