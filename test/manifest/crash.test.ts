import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FCCTL_BIN, jsonLines, runCli, spawnCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';
import { insertProjections, testUuid } from '../helpers/manifest.js';

const test = servicesTest({ prefix: 'crash' });

// kill -9 at random points: every resumed scan must end byte-identical to an uninterrupted one.
const FORM = testUuid('crash', 'form');
const ROWS = 50_000;
const KILLS = 20;
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
/** A small seeded generator, so a failure can be replayed from the seed in its message. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  env = dbs.env();
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  await insertProjections(
    dbs.admin,
    dbs.shName,
    Array.from({ length: ROWS }, (_, i) => ({
      answerUuid: testUuid('crash', i),
      formUuid: FORM,
      revision: 1 + (i % 5),
      isDeleted: i % 31 === 0 ? 1 : 0,
      createTime: i % 101 === 0 ? null : '2026-10-01 08:00:00',
    })),
  );
  dir = tmp;
}, 120_000);

/** Starts a scan and SIGKILLs it once its output reaches `killAt` bytes (or at once when 0); resolves when it is gone. */
function scanAndKill(
  args: readonly string[],
  out: string,
  killAt: number,
): Promise<{ killed: boolean; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FCCTL_BIN, ...args], { env: env as NodeJS.ProcessEnv, stdio: 'ignore' });
    let killed = false;
    const poll = setInterval(() => {
      let size = -1;
      try {
        size = statSync(out).size;
      } catch {
        /* not created yet */
      }
      if (size >= killAt && !killed) {
        killed = child.kill('SIGKILL');
      }
    }, 1);
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(poll);
      resolve({ killed, code });
    });
  });
}

describe(`manifest scan under kill -9 (${ROWS} rows, ${KILLS} kills)`, () => {
  it('every kill leaves a checkpoint whose bytes are a prefix of the uninterrupted scan; the resumed scan ends byte-identical', async () => {
    const refOut = join(dir, 'reference.jsonl');
    const ref = await runCli(
      ['--json', 'manifest', 'scan', '--side', 'sh', '--school', '5', '--form', FORM, '--out', refOut, '--size', '500'],
      { env },
    );
    expect(ref.code).toBe(0);
    const reference = readFileSync(refOut);
    expect(jsonLines(ref.stdout).at(-1)).toMatchObject({ rows: ROWS, completed: true });

    const seed = Number(process.env['CRASH_SEED'] ?? Date.now() % 1_000_000);
    const random = lcg(seed);
    const why = `(CRASH_SEED=${seed})`;
    const out = join(dir, 'killed.jsonl');
    const cpPath = join(dir, 'killed.checkpoint.json');
    const args = [
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
      '--size',
      '100',
    ];
    // Kill points: random byte offsets spread over the file, in increasing order (each resume continues past the last).
    const points = Array.from({ length: KILLS }, () => Math.floor(random() * reference.length)).sort((a, b) => a - b);
    let kills = 0;
    let lastRows = -1;
    const checkpointed = new Set<number>();
    for (const point of points) {
      const r = await scanAndKill(args, out, point);
      if (r.killed) kills++;
      if (!existsSync(cpPath)) continue; // killed before its first checkpoint: nothing to check yet
      const cp = JSON.parse(readFileSync(cpPath, 'utf8')) as {
        rows: number;
        outputBytes: number;
        sha256: string;
        completed: boolean;
      };
      const now = readFileSync(out);
      // The output may hold a page past its checkpoint (killed between the two), never less.
      expect(now.length, why).toBeGreaterThanOrEqual(cp.outputBytes);
      expect(
        now.subarray(0, cp.outputBytes).equals(reference.subarray(0, cp.outputBytes)),
        `checkpointed prefix ${why}`,
      ).toBe(true);
      expect(sha(now.subarray(0, cp.outputBytes)), why).toBe(cp.sha256);
      expect(reference.subarray(0, cp.outputBytes).toString('utf8').split('\n').length - 1, why).toBe(cp.rows);
      expect(cp.rows, why).toBeGreaterThanOrEqual(lastRows);
      lastRows = cp.rows;
      checkpointed.add(cp.rows);
    }
    expect(kills, `every scan was killed ${why}`).toBe(KILLS);
    // The kills landed all over the scan, not only at start-up.
    expect(checkpointed.size, why).toBeGreaterThanOrEqual(10);
    const rest = await spawnCli(args, { env, timeoutMs: 120_000 });
    expect(rest.stderr).toBe('');
    expect(rest.code).toBe(0);
    expect(jsonLines(rest.stdout).at(-1)).toMatchObject({
      completed: true,
      rows: ROWS,
      resumed: true,
      sha256: sha(reference),
    });
    expect(readFileSync(out).equals(reference), `final output ${why}`).toBe(true);
  }, 300_000);

  it('FC side too: killed three times while hashing answers, resumed byte-identical', async () => {
    expect(
      (await runCli(['dev', 'seed', '--answers', '3000', '--schools', '1', '--consumers', '1', '--no-sh'], { env }))
        .code,
    ).toBe(0);
    const [forms] = await dbs.admin.query(
      `SELECT form_uuid, COUNT(*) AS n FROM \`${dbs.fcName}\`.answer GROUP BY form_uuid ORDER BY n DESC LIMIT 1`,
    );
    const form = (forms as Array<{ form_uuid: string }>)[0]!.form_uuid;
    const base = ['--json', 'manifest', 'scan', '--side', 'fc', '--school', '5', '--form', form];
    const refOut = join(dir, 'fc-reference.jsonl');
    expect((await runCli([...base, '--out', refOut, '--size', '500'], { env })).code).toBe(0);
    const reference = readFileSync(refOut);
    const out = join(dir, 'fc-killed.jsonl');
    let kills = 0;
    for (const fraction of [0.2, 0.5, 0.8]) {
      const r = await scanAndKill(
        [...base, '--out', out, '--size', '20'],
        out,
        Math.floor(reference.length * fraction),
      );
      if (r.killed) kills++;
    }
    expect(kills).toBe(3);
    const rest = await spawnCli([...base, '--out', out, '--size', '20'], { env });
    expect(rest.code).toBe(0);
    expect(readFileSync(out).equals(reference)).toBe(true);
  }, 120_000);
});
