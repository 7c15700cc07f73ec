import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { buildAnswerSnapshot } from '../../src/lib/answers/snapshot.js';
import { buildEnvelope } from '../../src/lib/deliveries/envelope.js';
import type { DeliveryRow } from '../../src/lib/deliveries/types.js';
import { CHECKPOINT_FORMAT, writeCheckpoint } from '../../src/lib/manifest/checkpoint.js';
import { paramsDigest } from '../../src/lib/canon/params-digest.js';
import { processStartTicks } from '../../src/lib/files/lock.js';
import { compareKeys } from '../../src/lib/manifest/row.js';
import { proofDigest } from '../../src/lib/retire-absent/decide.js';
import { expectRefused, SH_TABLES_FOR_CHECKSUM } from '../helpers/bad-input.js';
import { checksumTables, FC_TABLES } from '../helpers/checksum.js';
import { cleanEnv, FCCTL_BIN, jsonLines, runCli, type CliResult } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { insertGrant } from '../helpers/deliveries.js';
import { recordTotals } from '../helpers/faults.js';
import { answerHash, answerSource, insertAnswers, insertProjections, testUuid } from '../helpers/manifest.js';
import { hashOf } from '../helpers/projection.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'badrec', init: 'all' });

/**
 * The bad-input catalogue of the reconciliation commands: `manifest page|scan`, `reconcile
 * diff|run`, `retire-absent [prove]` and `projection repair-authoritative`. Every case is data: the
 * argv (built when the test runs, so files derived from a real reconcile run exist), the exit code
 * and what the one stderr line must name. A refusal is asserted by `expectRefused` (code, one
 * `fcctl:` line, no stack trace, every FC and SH table checksum unchanged) plus, here, nothing on
 * stdout for exit 2, a line of bounded length, and the files the case names left as they were.
 * Inputs that are not clearly bad (a hostile string in a free-text id, say) are `accepted`: the
 * exit code fcctl documents for them, and still no database change.
 */

const FORM = testUuid('bad-reconcile', 'form');
const U = (n: number) => testUuid('bad-reconcile', n);
const KEY = '100100';
const SYNCED = [1, 2, 3, 4];
const STALE = 5; // FC revision 3, local revision 2
const MISSING = 6; // at FC only
const ABSENT = [11, 12, 13]; // local only, created long before any task start: retire candidates
const LOCAL_HASH_5 = hashOf('local-5');

const SQL = "'; DROP TABLE answer; --";
/**
 * What every string option is tried with: SQL metacharacters, LIKE wildcards, a backslash, NUL,
 * routing-key wildcards and separators, and what Node makes of non-UTF-8 argv bytes (U+FFFD; a
 * lone surrogate only reaches fcctl in-process).
 */
const HOSTILE = [SQL, '%', '_', '\\', 'a\u0000b', '*', '#', 'a.b', '\uFFFD', '\uD800'];
/** A value too large for any option (an argv string may be 128 KiB). */
const HUGE_ARG = 'x'.repeat(100_000);
/** Not whole numbers, or out of every range. */
const NOT_COUNTS = ['abc', '-1', '1e309', '99999999999999999999', '', '1.5', '0x10', ' '];
const NOT_SCHOOLS = ['0', ...NOT_COUNTS, HUGE_ARG, ...HOSTILE];
/** Not `VAR=N[,VAR=N…]` (`--max-load`). */
const NOT_LOADS = [
  '',
  ' ',
  'Threads_running',
  'Threads_running=',
  '=5',
  'Threads_running=-1',
  'x=1.5',
  'x=1e3',
  '9x=1',
  'a=1,',
  'a=1,a=2',
  'Threads_running:5',
  'Threads_running=0',
  'Uptime=100',
  'Com_select=5',
  'Innodb_rows_read=1',
  HUGE_ARG,
  ...HOSTILE,
];
const NOT_UUIDS = ['', 'abc', `${FORM}0`, FORM.replaceAll('-', ''), `{${FORM}}`, HUGE_ARG, ...HOSTILE];
/** Ids refused by every id option (proof, task, run ids). */
const NOT_IDS = ['', 'x'.repeat(129), 'a\nb', ' lead', 'trail ', 'a\u0000b', '\u0001'];
const DEEP = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
/** The size of a "huge input": one 50 MB line. */
const HUGE_BYTES = 50 * 1024 * 1024;
/** The longest stderr line a refusal may print (fcctl cuts echoed values at 2,000 characters). */
const MAX_LINE = 2200;

const dir = mkdtempSync(join(tmpdir(), 'fcctl-bad-reconcile-'));
for (const d of ['files', 'scan', 'proofs', 'runs', 'keep']) mkdirSync(join(dir, d));
const RUN = join(dir, 'run');
const R = {
  fcManifest: join(RUN, 'fc-manifest.jsonl'),
  fcCheckpoint: join(RUN, 'fc-manifest.checkpoint.json'),
  shManifest: join(RUN, 'sh-manifest.jsonl'),
  shCheckpoint: join(RUN, 'sh-manifest.checkpoint.json'),
  candidates: join(RUN, 'retire-candidates.jsonl'),
  plan: join(RUN, 'repair-plan.jsonl'),
  report: join(RUN, 'report.csv'),
  runJson: join(RUN, 'run.json'),
};
const PROOF = join(dir, 'proof.json');
/** Paths a refused command must never create (one per use, so a wrong acceptance cannot cascade). */
const NEVER_DIR = join(dir, 'never-dir');
const NEVER_DIFF = join(dir, 'never-diff');
const NEVER_RUN = join(dir, 'never-run');
const NEVER_PROOF = join(dir, 'proofs', 'never.json');
const EVIDENCE = join(dir, 'repair-evidence.jsonl');

let dbs: TestDatabases;
let env: Record<string, string | undefined>;

test.beforeAll(async ({ dbs: services }) => {
  dbs = services;
  env = dbs.env();
  await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: KEY, grantVersion: 1 });
  const answers = [
    ...SYNCED.map((n) => ({ answerUuid: U(n), formUuid: FORM, revision: 2 })),
    { answerUuid: U(STALE), formUuid: FORM, revision: 3 },
    { answerUuid: U(MISSING), formUuid: FORM, revision: 1 },
  ];
  await insertAnswers(dbs.admin, dbs.fcName, answers);
  await insertProjections(dbs.admin, dbs.shName, [
    ...answers.slice(0, SYNCED.length).map((a) => ({ ...a, contentHash: answerHash(a) })),
    { answerUuid: U(STALE), formUuid: FORM, revision: 2, contentHash: LOCAL_HASH_5 },
    ...ABSENT.map((n, i) => ({
      answerUuid: U(n),
      formUuid: FORM,
      revision: n,
      createTime: `2026-10-0${i + 1} 08:00:00`,
    })),
  ]);
  // The real thing makes the files the cases start from: manifests, checkpoints, plan, candidates, proof.
  const run = await runCli(['--json', 'reconcile', 'run', '--school', '5', '--form', FORM, '--out-dir', RUN], { env });
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  expect(lines(R.candidates)).toHaveLength(ABSENT.length);
  expect(lines(R.plan)).toHaveLength(2);
  const prove = await runCli(
    [
      '--json',
      'retire-absent',
      'prove',
      '--candidates',
      R.candidates,
      '--fc-manifest',
      R.fcManifest,
      '--out',
      PROOF,
      '--proof-id',
      'rp-bad-input',
    ],
    { env },
  );
  expect(prove.stderr).toBe('');
  expect(prove.code).toBe(0);
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------- building argv and files

type Opts = Readonly<Record<string, string | true>>;

/** `cmd` with its options as `--name=value` (so `-1` or an empty value is the option's value, not a flag). */
const argv = (cmd: readonly string[], opts: Opts): string[] => [
  ...cmd,
  ...Object.entries(opts).flatMap(([k, v]) => (v === true ? [k] : [`${k}=${v}`])),
];
const without = (opts: Opts, name: string): Opts =>
  Object.fromEntries(Object.entries(opts).filter(([k]) => k !== name));
/** A value as a test name shows it. */
const shown = (v: string) =>
  v.length > 40 ? `${JSON.stringify(v.slice(0, 20))}… (${v.length} chars)` : JSON.stringify(v);
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const text = (path: string) => readFileSync(path, 'utf8');
const lines = (path: string) => text(path).split('\n').filter(Boolean);
const objects = (path: string) => lines(path).map((l) => JSON.parse(l) as Record<string, unknown>);
const jsonl = (rows: readonly object[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join('');

let fileNo = 0;
/** Writes a case's input file (a fresh name each time) and returns its path. */
function file(name: string, content: string | Buffer): string {
  const path = join(dir, 'files', `${++fileNo}-${name}`);
  writeFileSync(path, content);
  return path;
}

let pad: Buffer | undefined;
/** A file of `head`, 50 MB of `a`, `tail`: one huge line when neither holds a newline. */
function huge(name: string, head: string, tail = '\n'): string {
  const path = join(dir, 'files', `${++fileNo}-${name}`);
  pad ??= Buffer.alloc(HUGE_BYTES, 'a');
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, head);
    writeSync(fd, pad);
    writeSync(fd, tail);
  } finally {
    closeSync(fd);
  }
  return path;
}

/** A file that says it is `bytes` long without holding them (sparse): over a size limit for free. */
function sparse(name: string, bytes: number): string {
  const path = file(name, '');
  truncateSync(path, bytes);
  return path;
}

/**
 * A manifest of exactly `content` and a completed checkpoint that vouches for those bytes (as if a
 * scan had written them), beside it as `reconcile diff` and `prove` look for it: so what refuses the
 * file is the line check, not the hash.
 */
async function vouched(
  name: string,
  side: 'fc' | 'sh',
  content: string | Buffer | { from: string },
  params: { schId?: string; database?: string } = {},
): Promise<string> {
  const sub = join(dir, 'files', `${++fileNo}-${name}`);
  mkdirSync(sub);
  const path = join(sub, `${side}.jsonl`);
  if (typeof content === 'object' && 'from' in content) cpSync(content.from, path);
  else writeFileSync(path, content);
  const bytes = readFileSync(path);
  const p = {
    side,
    database: params.database ?? 'test:3306/none',
    schId: params.schId ?? '5',
    formUuid: FORM,
    shard: null,
    out: path,
  };
  await writeCheckpoint(join(sub, `${side}.checkpoint.json`), {
    format: CHECKPOINT_FORMAT,
    params: p,
    paramsDigest: paramsDigest(p),
    size: 200,
    cursor: null,
    pages: 1,
    rows: bytes.filter((b) => b === 0x0a).length,
    outputBytes: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    completed: true,
    startedAt: '2026-11-30T00:00:00.000Z',
    updatedAt: '2026-11-30T00:01:00.000Z',
    completedAt: '2026-11-30T00:01:00.000Z',
    // just after DIFF_OPTS' task start: what refuses the file is the line check
    dbStartedAt: '2026-11-30 01:00:01',
  });
  return path;
}

/** A copy of a real manifest with `edit` applied to its checkpoint (as JSON), the bytes kept. */
function withCheckpoint(side: 'fc' | 'sh', edit: (c: Record<string, unknown>) => void): string {
  const sub = join(dir, 'files', `${++fileNo}-${side}-checkpoint`);
  mkdirSync(sub);
  const path = join(sub, `${side}.jsonl`);
  cpSync(side === 'fc' ? R.fcManifest : R.shManifest, path);
  const c = JSON.parse(text(side === 'fc' ? R.fcCheckpoint : R.shCheckpoint)) as Record<string, unknown>;
  edit(c);
  writeFileSync(join(sub, `${side}.checkpoint.json`), JSON.stringify(c));
  return path;
}

/** Rewrites a JSON file with `edit` applied. */
function editJson(path: string, edit: (c: Record<string, unknown>) => void): void {
  const c = JSON.parse(text(path)) as Record<string, unknown>;
  edit(c);
  writeFileSync(path, JSON.stringify(c));
}

/** Changes a checkpoint's parameters and seals them again (its digest matches: a checkpoint of those parameters). */
function reparam(c: Record<string, unknown>, changes: Record<string, unknown>): void {
  const p = { ...(c['params'] as Record<string, unknown>), ...changes };
  c['params'] = p;
  c['paramsDigest'] = paramsDigest(p as never);
}

/** The checkpoint `manifest scan` writes beside a manifest. */
const checkpointOf = (manifest: string) => manifest.replace(/\.jsonl$/, '.checkpoint.json');

/** A copy of a real manifest whose checkpoint file holds `content` (or is a copy of the file `from`) instead. */
function withCheckpointText(side: 'fc' | 'sh', content: string | Buffer | { from: string }): string {
  const path = withCheckpoint(side, () => undefined);
  if (typeof content === 'object' && 'from' in content) cpSync(content.from, checkpointOf(path));
  else writeFileSync(checkpointOf(path), content);
  return path;
}

/** A manifest file with one single-digit revision changed: the same length, other bytes. */
const flipRevision = (path: string) =>
  writeFileSync(
    path,
    text(path).replace(/"revision":"(\d)"/, (_s, d: string) => `"revision":"${(Number(d) + 1) % 10}"`),
  );

/** A copy of a real manifest, one revision changed, its checkpoint kept. */
function flippedManifest(side: 'fc' | 'sh'): string {
  const m = withCheckpoint(side, () => undefined);
  flipRevision(m);
  return m;
}

/** `dbStartedAt` of the real FC checkpoint: the FC database's clock when its scan began. */
const fcScanStart = () => (JSON.parse(text(R.fcCheckpoint)) as { dbStartedAt: string }).dbStartedAt;

/** `database` of the real FC checkpoint: the configured FC database, as a scan names it. */
const fcDatabase = () => (JSON.parse(text(R.fcCheckpoint)) as { params: { database: string } }).params.database;

/** The first line of a real manifest as an object (the template for edited lines). */
const firstRow = (side: 'fc' | 'sh') =>
  JSON.parse(lines(side === 'fc' ? R.fcManifest : R.shManifest)[0]!) as Record<string, unknown>;
/** The real FC manifest with `row` added in answer order. */
const fcManifestWith = (row: Record<string, unknown>) =>
  jsonl(
    [...objects(R.fcManifest), row].sort((a, b) => compareKeys(a['answerUuid'] as string, b['answerUuid'] as string)),
  );
/** A real manifest with its first line replaced by `row`. */
const editedManifest = (side: 'fc' | 'sh', row: string) =>
  [row, ...lines(side === 'fc' ? R.fcManifest : R.shManifest).slice(1)].map((l) => `${l}\n`).join('');

/** The proof, edited and sealed again with a correct digest (what a person with fc.canon.v1 could do). */
function resealed(name: string, edit: (p: Record<string, unknown>) => void): string {
  const p = JSON.parse(text(PROOF)) as Record<string, unknown>;
  edit(p);
  p['digest'] = proofDigest(p);
  return file(name, `${JSON.stringify(p, null, 2)}\n`);
}

/** The proof, edited and NOT sealed again. */
function tampered(name: string, edit: (p: Record<string, unknown>) => void): string {
  const p = JSON.parse(text(PROOF)) as Record<string, unknown>;
  edit(p);
  return file(name, `${JSON.stringify(p, null, 2)}\n`);
}

const entries = (p: Record<string, unknown>) => p['entries'] as Array<Record<string, unknown>>;
const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();

/** Candidates in a directory of their own, with `runJson` beside them (or none). */
function candidatesBeside(runJson: string | null): string {
  const sub = join(dir, 'files', `${++fileNo}-candidates`);
  mkdirSync(sub);
  cpSync(R.candidates, join(sub, 'retire-candidates.jsonl'));
  if (runJson !== null) writeFileSync(join(sub, 'run.json'), runJson);
  return join(sub, 'retire-candidates.jsonl');
}

/** A copy of the real run directory (its checkpoints naming the copies), `edit` applied to it. */
function runDirCopy(edit: (d: string) => void): string {
  const d = join(dir, 'runs', `${++fileNo}-run`);
  cpSync(RUN, d, { recursive: true });
  for (const side of ['fc', 'sh'])
    editJson(join(d, `${side}-manifest.checkpoint.json`), (c) =>
      reparam(c, { out: join(d, `${side}-manifest.jsonl`) }),
    );
  edit(d);
  return d;
}

/** A lock file naming this (live) test process, as a running `command` would hold it. */
const liveLock = (command: string, host = hostname()) =>
  JSON.stringify({
    host,
    pid: process.pid,
    startTicks: processStartTicks('self'),
    nonce: 'held',
    startedAt: new Date().toISOString(),
    command,
  });

/** What a path holds: a file's SHA-256, a directory's names, or absent. */
function stateOf(path: string): string {
  if (!existsSync(path)) return 'absent';
  if (statSync(path).isDirectory()) return `dir:${readdirSync(path).sort().join(',')}`;
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

// ---------------------------------------------------------------- running the cases

/** Input that must be refused: exit 2 (or 4, a safety refusal; 3, an output that cannot be written), one line naming it, nothing changed. */
interface Refusal {
  readonly name: string;
  readonly args: () => string[] | Promise<string[]>;
  readonly code?: 2 | 3 | 4;
  readonly says: RegExp;
  readonly env?: () => Record<string, string | undefined>;
  readonly stdin?: () => string;
  /** paths whose content (or absence) must be the same afterwards */
  readonly keeps?: readonly string[];
  /** rows the refusal adds to fc_reconcile_audit (a proof refused with --execute is recorded, SPEC §8); 0 unless given */
  readonly audits?: number;
}

/** Input fcctl accepts by design: the exit code it documents, and no database change. */
interface Accepted {
  readonly name: string;
  readonly args: () => string[] | Promise<string[]>;
  readonly code: 0 | 1 | 3;
  readonly check?: (r: CliResult) => void;
}

function refusals(title: string, cases: readonly Refusal[]): void {
  describe(`${title}: refused`, () => {
    for (const c of cases) {
      test(c.name, async () => {
        const args = await c.args();
        const kept = (c.keeps ?? []).map(stateOf);
        const code = c.code ?? 2;
        const audits = c.audits ?? 0;
        const auditsBefore = await auditCount();
        // a recorded refusal changes the audit table only: every other table is checksummed
        const shTables = audits > 0 ? SH_TABLES_FOR_CHECKSUM.filter((t) => t !== 'fc_reconcile_audit') : undefined;
        const r = await expectRefused(
          dbs,
          {
            name: `${title}: ${c.name}`,
            argv: args,
            code,
            says: c.says,
            env: c.env?.() ?? env,
            ...(c.stdin ? { stdin: c.stdin() } : {}),
          },
          shTables,
        );
        expect(await auditCount()).toBe(auditsBefore + audits);
        expect(r.stderr.length, r.stderr.slice(0, 200)).toBeLessThan(MAX_LINE);
        if (code === 2) expect(r.stdout).toBe('');
        expect((c.keeps ?? []).map(stateOf)).toEqual(kept);
      });
    }
  });
}

const checksums = async () =>
  [
    await checksumTables(dbs.admin, dbs.fcName, FC_TABLES),
    await checksumTables(dbs.admin, dbs.shName, SH_TABLES_FOR_CHECKSUM),
  ].join(' ');
const auditCount = async () =>
  Number(
    (
      (await dbs.admin.query(`SELECT COUNT(*) AS n FROM \`${dbs.shName}\`.fc_reconcile_audit`))[0] as Array<{
        n: string;
      }>
    )[0]!.n,
  );

function accepted(title: string, cases: readonly Accepted[]): void {
  describe(`${title}: accepted harmlessly`, () => {
    for (const c of cases) {
      test(c.name, async () => {
        const args = await c.args();
        const before = await checksums();
        const r = await runCli(['--json', ...args], { env });
        const after = await checksums();
        const ok = r.code === c.code && after === before;
        recordTotals(`bad-input: ${title}: ${c.name}`, {
          badInputsTried: 1,
          badInputsAcceptedHarmlessly: ok ? 1 : 0,
          badInputsMishandled: ok ? 0 : 1,
        });
        expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: c.code });
        // exit 3 is one line; 0 and 1 are results, not errors
        if (c.code === 3) expect(r.stderr).toMatch(/^fcctl: [^\n]*\n$/);
        else expect(r.stderr).toBe('');
        expect(after).toBe(before);
        c.check?.(r);
      });
    }
  });
}

const summaryOf = (r: CliResult) => jsonLines(r.stdout).find((l) => l['type'] === 'summary')!;
const resultsOf = (r: CliResult) => jsonLines(r.stdout).filter((l) => l['type'] === 'result');

/** One refusal per value of `option`, the other options of `base` kept. */
function eachValue(
  cmd: readonly string[],
  base: Opts,
  option: string,
  values: readonly string[],
  says = new RegExp(escapeRe(option)),
  extra: Partial<Refusal> = {},
): Refusal[] {
  return values.map((v) => ({
    name: `${option} ${shown(v)}`,
    args: () => argv(cmd, { ...base, [option]: v }),
    says,
    ...extra,
  }));
}

/** Each required option left out, an unknown option, and a stray argument. */
function usageCases(cmd: readonly string[], base: Opts, required: readonly string[]): Refusal[] {
  return [
    ...required.map((o) => ({
      name: `without ${o}`,
      args: () => argv(cmd, without(base, o)),
      says: new RegExp(`required option '${escapeRe(o)}|give ${escapeRe(o)}`),
    })),
    {
      name: 'an unknown option',
      args: () => argv(cmd, { ...base, '--bogus': 'x' }),
      says: /unknown option '--bogus=x'/,
    },
    { name: 'an unknown option with SQL in it', args: () => [...argv(cmd, base), `--${SQL}`], says: /unknown option/ },
    { name: 'a stray argument', args: () => [...argv(cmd, base), 'extra'], says: /too many arguments|unknown command/ },
  ];
}

const noDatabase = (which: 'FCCTL_FC_DATABASE_URL' | 'FCCTL_SH_DATABASE_URL') => () => ({ ...env, [which]: undefined });

// ---------------------------------------------------------------- manifest page

const PAGE = ['manifest', 'page'];
const PAGE_OPTS: Opts = { '--side': 'sh', '--school': '5', '--form': FORM };

refusals('manifest page', [
  ...usageCases(PAGE, PAGE_OPTS, ['--side', '--school', '--form']),
  ...eachValue(PAGE, PAGE_OPTS, '--side', ['', 'SH', 'both', HUGE_ARG, ...HOSTILE]),
  ...eachValue(PAGE, PAGE_OPTS, '--school', NOT_SCHOOLS),
  ...eachValue(PAGE, { ...PAGE_OPTS, '--side': 'fc' }, '--school', ['0', '-1', SQL, '*']).map((c) => ({
    ...c,
    name: `(fc side) ${c.name}`,
  })),
  ...eachValue(PAGE, PAGE_OPTS, '--form', NOT_UUIDS),
  ...eachValue(PAGE, PAGE_OPTS, '--cursor', NOT_UUIDS),
  ...eachValue(PAGE, PAGE_OPTS, '--size', ['0', '501', ...NOT_COUNTS]),
  {
    name: 'no SH database configured',
    args: () => argv(PAGE, PAGE_OPTS),
    env: noDatabase('FCCTL_SH_DATABASE_URL'),
    says: /shDatabaseUrl is not configured/,
  },
  {
    name: 'no FC database configured (fc side)',
    args: () => argv(PAGE, { ...PAGE_OPTS, '--side': 'fc' }),
    env: noDatabase('FCCTL_FC_DATABASE_URL'),
    says: /fcDatabaseUrl is not configured/,
  },
]);

accepted('manifest page', [
  // Keyset paging after any well-formed uuid: one that is no answer just starts the page there.
  {
    name: '--cursor of no answer',
    args: () => argv(PAGE, { ...PAGE_OPTS, '--cursor': 'ffffffff-ffff-4fff-8fff-ffffffffffff' }),
    code: 0,
    check: (r) => expect(summaryOf(r)).toMatchObject({ rows: 0, completed: true }),
  },
  // uuids are compared exactly (utf8mb4_bin): the upper-case form is another, absent, form.
  {
    name: '--form in upper case',
    args: () => argv(PAGE, { ...PAGE_OPTS, '--form': FORM.toUpperCase() }),
    code: 0,
    check: (r) => expect(summaryOf(r)).toMatchObject({ rows: 0 }),
  },
  {
    name: '--school given twice (the last counts)',
    args: () => [...argv(PAGE, PAGE_OPTS), '--school=6'],
    code: 0,
    check: (r) => expect(summaryOf(r)).toMatchObject({ rows: 0 }),
  },
]);

// ---------------------------------------------------------------- manifest scan

const SCAN = ['manifest', 'scan'];
const SCAN_OUT = join(dir, 'scan', 'sh.jsonl');
const SCAN_OPTS: Opts = { ...PAGE_OPTS, '--out': SCAN_OUT };
/** A scan whose output and checkpoint are copies of the real SH ones, `edit`ed; kept: both must survive the refusal. */
function scanWith(
  edit: (out: string, checkpoint: string) => void,
  params: Opts = {},
): { args: () => string[]; keeps: string[] } {
  const sub = join(dir, 'scan', `${++fileNo}`);
  const out = join(sub, 'sh.jsonl');
  const checkpoint = join(sub, 'sh.checkpoint.json');
  return {
    args: () => {
      mkdirSync(sub);
      cpSync(R.shManifest, out);
      cpSync(R.shCheckpoint, checkpoint);
      editJson(checkpoint, (c) => reparam(c, { out }));
      edit(out, checkpoint);
      return argv(SCAN, { ...SCAN_OPTS, '--out': out, ...params });
    },
    keeps: [out, checkpoint, `${checkpoint}.lock`],
  };
}

refusals('manifest scan', [
  ...usageCases(SCAN, SCAN_OPTS, ['--side', '--school', '--form', '--out']),
  ...eachValue(SCAN, SCAN_OPTS, '--side', ['', 'FC', ...HOSTILE]),
  ...eachValue(SCAN, SCAN_OPTS, '--school', NOT_SCHOOLS),
  ...eachValue(SCAN, SCAN_OPTS, '--form', NOT_UUIDS),
  ...eachValue(SCAN, SCAN_OPTS, '--size', ['0', '501', ...NOT_COUNTS]),
  ...eachValue(SCAN, SCAN_OPTS, '--shard', [
    '',
    '0/4',
    '5/4',
    '1/0',
    '1/4097',
    'a/b',
    '1/4/2',
    '-1/4',
    '1',
    '1e309/2',
    '99999999999999999999/1',
    ...HOSTILE,
  ]),
  ...eachValue(SCAN, SCAN_OPTS, '--out', ['', 'a\u0000b.jsonl'], /--out/, { keeps: [join(dir, 'scan')] }),
  // Issue 19 §2: malformed throttle limits, refused by the flag parser before anything connects
  ...eachValue(SCAN, SCAN_OPTS, '--max-load', NOT_LOADS, /--max-load/, { keeps: [join(dir, 'scan')] }),
  ...eachValue(SCAN, SCAN_OPTS, '--max-lag', ['86401', ...NOT_COUNTS], /--max-lag/, { keeps: [join(dir, 'scan')] }),
  {
    name: '--out is a directory (no checkpoint written beside it)',
    args: () => argv(SCAN, { ...SCAN_OPTS, '--out': join(dir, 'keep') }),
    says: /--out .*keep is not a regular file/,
    keeps: [join(dir, 'keep'), join(dir, 'keep.checkpoint.json')],
  },
  {
    name: '--out in a directory that does not exist',
    args: () => argv(SCAN, { ...SCAN_OPTS, '--out': join(NEVER_DIR, 'x.jsonl') }),
    says: /directory .* does not exist/,
    keeps: [NEVER_DIR],
  },
  ...eachValue(SCAN, SCAN_OPTS, '--checkpoint', ['', 'c\u0000.json'], /--checkpoint/, { keeps: [join(dir, 'scan')] }),
  {
    name: '--checkpoint is --out',
    args: () => argv(SCAN, { ...SCAN_OPTS, '--checkpoint': SCAN_OUT }),
    says: /must be different files/,
    keeps: [join(dir, 'scan')],
  },
  {
    name: '--checkpoint is a directory',
    args: () => argv(SCAN, { ...SCAN_OPTS, '--checkpoint': join(dir, 'keep') }),
    says: /cannot read checkpoint .*EISDIR/,
    keeps: [join(dir, 'keep')],
  },
  {
    name: 'no SH database configured',
    args: () => argv(SCAN, SCAN_OPTS),
    env: noDatabase('FCCTL_SH_DATABASE_URL'),
    says: /shDatabaseUrl is not configured/,
    keeps: [join(dir, 'scan')],
  },
  // A checkpoint is written atomically by fcctl: one that does not parse was not, and is never overwritten (exit 4).
  ...(
    [
      [
        'a truncated checkpoint',
        (_o: string, c: string) => writeFileSync(c, text(c).slice(0, 60)),
        /not a valid manifest checkpoint \(not valid JSON\)/,
      ],
      ['an empty checkpoint', (_o: string, c: string) => writeFileSync(c, ''), /not a valid manifest checkpoint/],
      [
        'a checkpoint that is JSON null',
        (_o: string, c: string) => writeFileSync(c, 'null'),
        /not a fcctl\.manifest\.checkpoint\.v1 file/,
      ],
      [
        'a checkpoint that is an array',
        (_o: string, c: string) => writeFileSync(c, '[1,2]'),
        /not a fcctl\.manifest\.checkpoint\.v1 file/,
      ],
      [
        'a checkpoint of non-UTF-8 bytes',
        (_o: string, c: string) => writeFileSync(c, Buffer.from([0xff, 0xfe, 0x7b, 0x80])),
        /not a valid manifest checkpoint/,
      ],
      [
        'a checkpoint with a member of the wrong type',
        (_o: string, c: string) => editJson(c, (x) => void (x['rows'] = '21')),
        /a member is missing or of the wrong type/,
      ],
      [
        'a checkpoint with a negative output length',
        (_o: string, c: string) => editJson(c, (x) => void (x['outputBytes'] = -1)),
        /a member is missing or of the wrong type/,
      ],
      [
        'a checkpoint whose params were edited (digest kept)',
        (_o: string, c: string) => editJson(c, (x) => void ((x['params'] as Record<string, unknown>)['schId'] = '6')),
        /paramsDigest does not match/,
      ],
      [
        'a checkpoint of 100,000 nested arrays',
        (_o: string, c: string) => writeFileSync(c, DEEP),
        /not a fcctl\.manifest\.checkpoint\.v1 file/,
      ],
      [
        'a checkpoint with 100,000 nested arrays in its params',
        (_o: string, c: string) => writeFileSync(c, text(c).replace('"params":{', `"params":{"extra":${DEEP},`)),
        /not a valid manifest checkpoint/,
      ],
      [
        "a lock file that is not fcctl's",
        (_o: string, c: string) => writeFileSync(`${c}.lock`, 'garbage'),
        /not a lock file fcctl wrote/,
      ],
      [
        'a lock held by a running scan',
        (_o: string, c: string) => writeFileSync(`${c}.lock`, liveLock('manifest scan')),
        /held by a running manifest scan/,
      ],
      [
        'a lock held on another host',
        (_o: string, c: string) => writeFileSync(`${c}.lock`, liveLock('manifest scan', 'elsewhere.example')),
        /on host elsewhere\.example/,
      ],
      [
        'a checkpoint past the end of the output',
        (_o: string, c: string) => editJson(c, (x) => void (x['outputBytes'] = (x['outputBytes'] as number) + 1000)),
        /shorter than the \d+ bytes its checkpoint records/,
      ],
      [
        'an output whose checkpointed bytes changed',
        (o: string) => flipRevision(o),
        /the first \d+ bytes of .* changed since they were checkpointed/,
      ],
      [
        'an output longer than its completed scan',
        (o: string) => writeFileSync(o, `${text(o)}{"extra":1}\n`),
        /bytes after the end of its completed scan/,
      ],
      ['an output that was deleted', (o: string) => rmSync(o), /output .* is missing, shorter than/],
    ] as const
  ).map(([name, edit, says]): Refusal => ({ name, code: 4, says, ...scanWith(edit) })),
  ...(
    [
      ['a checkpoint of another school', { '--school': '6' }],
      ['a checkpoint of the other side', { '--side': 'fc' }],
      ['a checkpoint of another form', { '--form': U(99) }],
      ['a checkpoint of an unsharded scan, resumed as a shard', { '--shard': '1/2' }],
    ] as const
  ).map(
    ([name, params]): Refusal => ({
      name,
      code: 4,
      says: /belongs to another scan .*pass --restart/,
      ...scanWith(() => undefined, params),
    }),
  ),
  {
    name: 'a checkpoint of 50 MB on one line',
    code: 4,
    says: /not a valid manifest checkpoint/,
    ...scanWith((_o, c) => cpSync(huge('checkpoint.json', '{"format":"fcctl.manifest.checkpoint.v1","pad":"'), c)),
  },
]);

accepted('manifest scan', [
  {
    name: 'an --out named with SQL, LIKE and routing-key metacharacters (a legal file name)',
    args: () => argv(SCAN, { ...SCAN_OPTS, '--out': join(dir, 'scan', `${SQL}%_*#a.b\\.jsonl`) }),
    code: 0,
    check: () => expect(text(join(dir, 'scan', `${SQL}%_*#a.b\\.jsonl`))).toBe(text(R.shManifest)),
  },
]);

// ---------------------------------------------------------------- reconcile diff

const DIFF = ['reconcile', 'diff'];
const DIFF_OPTS: Opts = {
  '--fc': R.fcManifest,
  '--sh': R.shManifest,
  '--task-start': '2026-11-30 01:00:00',
  '--out-dir': NEVER_DIFF,
};
const fcDiff = (fc: string) => argv(DIFF, { ...DIFF_OPTS, '--fc': fc });
const shDiff = (sh: string) => argv(DIFF, { ...DIFF_OPTS, '--sh': sh });
const FC_ROW = () => firstRow('fc');
const SH_ROW = () => firstRow('sh');
/** Manifest lines that are refused (exit 2, naming the line), with what the message says. */
const BAD_LINES: ReadonlyArray<readonly [string, 'fc' | 'sh', () => string | Buffer, RegExp]> = [
  ['a line that is not JSON', 'fc', () => editedManifest('fc', '{"answerUuid":'), /line 1: not valid JSON/],
  ['a line that is a JSON array', 'fc', () => editedManifest('fc', '[1]'), /line 1: not a JSON object/],
  [
    'revision as a number',
    'fc',
    () => editedManifest('fc', JSON.stringify({ ...FC_ROW(), revision: 2 })),
    /line 1: revision must be a string of digits/,
  ],
  [
    'revision of 20 digits',
    'fc',
    () => editedManifest('fc', JSON.stringify({ ...FC_ROW(), revision: '99999999999999999999' })),
    /line 1: revision must be/,
  ],
  [
    'revision negative',
    'fc',
    () => editedManifest('fc', JSON.stringify({ ...FC_ROW(), revision: '-1' })),
    /line 1: revision must be/,
  ],
  [
    'isDeleted as a string',
    'fc',
    () => editedManifest('fc', JSON.stringify({ ...FC_ROW(), isDeleted: 'false' })),
    /line 1: isDeleted must be true or false/,
  ],
  [
    'contentHash in upper case',
    'fc',
    () =>
      editedManifest(
        'fc',
        JSON.stringify({ ...FC_ROW(), contentHash: (FC_ROW()['contentHash'] as string).toUpperCase() }),
      ),
    /line 1: contentHash must be 64 lowercase hex/,
  ],
  ['schId 0', 'fc', () => editedManifest('fc', JSON.stringify({ ...FC_ROW(), schId: '0' })), /line 1: schId must be/],
  [
    'schId of another school than its checkpoint',
    'fc',
    () => editedManifest('fc', JSON.stringify({ ...FC_ROW(), schId: '6' })),
    /line 1: schId 6 is not the school of its checkpoint/,
  ],
  [
    'createTime not a time',
    'fc',
    () => editedManifest('fc', JSON.stringify({ ...FC_ROW(), createTime: SQL })),
    /line 1: createTime must be null or/,
  ],
  [
    'answerUuid of 37 characters',
    'fc',
    () => editedManifest('fc', JSON.stringify({ ...FC_ROW(), answerUuid: `${U(1)}0` })),
    /line 1: answerUuid must be a string of 1 to 36/,
  ],
  [
    'answerUuid with a NUL',
    'fc',
    () => editedManifest('fc', JSON.stringify({ ...FC_ROW(), answerUuid: '0\u0000' })),
    /line 1: answerUuid must be/,
  ],
  [
    'a member missing',
    'fc',
    () => editedManifest('fc', JSON.stringify(without(FC_ROW() as Opts, 'createTime'))),
    /line 1: member "createTime" is missing/,
  ],
  [
    'an FC line with retiredAt',
    'fc',
    () => editedManifest('fc', JSON.stringify({ ...FC_ROW(), retiredAt: null })),
    /line 1: unexpected member "retiredAt" in a fc manifest/,
  ],
  [
    'an SH line without retiredAt',
    'sh',
    () => editedManifest('sh', JSON.stringify(without(SH_ROW() as Opts, 'retiredAt'))),
    /line 1: member "retiredAt" is missing/,
  ],
  [
    'an SH line with an SQL member name',
    'sh',
    () => editedManifest('sh', JSON.stringify({ ...SH_ROW(), [SQL]: 1 })),
    /line 1: unexpected member/,
  ],
  [
    'rows not sorted by answerUuid',
    'fc',
    () => {
      const l = lines(R.fcManifest);
      return [l[1], l[0], ...l.slice(2)].map((x) => `${x}\n`).join('');
    },
    /line 2: answerUuid .* is not after/,
  ],
  [
    'an answer twice',
    'fc',
    () => {
      const l = lines(R.fcManifest);
      return [l[0], l[0], ...l.slice(1)].map((x) => `${x}\n`).join('');
    },
    /line 2: answerUuid .* is not after .*without duplicates/,
  ],
  [
    'an answer twice (sh)',
    'sh',
    () => {
      const l = lines(R.shManifest);
      return [...l, l.at(-1)].map((x) => `${x}\n`).join('');
    },
    /is not after .*without duplicates/,
  ],
  [
    'a byte that is not UTF-8',
    'fc',
    () =>
      Buffer.concat([
        Buffer.from(text(R.fcManifest).slice(0, 20)),
        Buffer.from([0xff]),
        Buffer.from(text(R.fcManifest).slice(20)),
      ]),
    /line 1: not valid UTF-8/,
  ],
  [
    'a truncated last line (no newline)',
    'fc',
    () => text(R.fcManifest).slice(0, -10),
    /truncated: the file does not end with a newline/,
  ],
  ['an empty line in the middle', 'fc', () => text(R.fcManifest).replace('\n', '\n\n'), /line 2: empty line/],
  [
    'isDeleted as a string (sh)',
    'sh',
    () => text(R.shManifest).replace('"isDeleted":false', '"isDeleted":"false"'),
    /isDeleted must be true or false/,
  ],
  ['a line of 100,000 nested arrays', 'fc', () => `${DEEP}\n`, /line 1: longer than 65536 bytes/],
];

refusals('reconcile diff', [
  ...usageCases(DIFF, DIFF_OPTS, ['--fc', '--sh', '--task-start', '--out-dir']).map((c) => ({
    ...c,
    keeps: [NEVER_DIFF],
  })),
  ...eachValue(
    DIFF,
    DIFF_OPTS,
    '--task-start',
    [
      '',
      'abc',
      '2026-13-01 00:00:00',
      '2026-02-30 01:00:00',
      '2026-11-30 24:00:00',
      '2026-11-30 01:60:00',
      '0000-00-00 00:00:00',
      '2026-11-30 01:00:00.5',
      '2026-11-30T01:00:00Z',
      '1e309',
      '99999999999999999999',
      HUGE_ARG,
      ...HOSTILE,
    ],
    /--task-start/,
    { keeps: [NEVER_DIFF] },
  ),
  ...['--fc', '--sh', '--out-dir', '--fc-checkpoint', '--sh-checkpoint'].flatMap((o) =>
    eachValue(DIFF, DIFF_OPTS, o, ['', 'a\u0000b'], new RegExp(escapeRe(o)), { keeps: [NEVER_DIFF] }),
  ),
  {
    name: '--fc that does not exist',
    args: () => fcDiff(join(dir, 'nope.jsonl')),
    says: /cannot read fc manifest .*no such file/,
    keeps: [NEVER_DIFF],
  },
  {
    name: '--sh that is a directory',
    args: () => shDiff(join(dir, 'keep')),
    says: /sh manifest .* is not a file/,
    keeps: [NEVER_DIFF],
  },
  {
    name: '--fc with a newline in its name',
    args: () => fcDiff(join(dir, 'no\nsuch.jsonl')),
    says: /no\\u000asuch\.jsonl: no such file/,
    keeps: [NEVER_DIFF],
  },
  {
    name: '--out-dir is a file',
    args: () => argv(DIFF, { ...DIFF_OPTS, '--out-dir': R.report }),
    says: /--out-dir .* is not a directory/,
    keeps: [R.report],
  },
  ...BAD_LINES.map(
    ([name, side, content, says]): Refusal => ({
      name,
      args: async () => (side === 'fc' ? fcDiff : shDiff)(await vouched('manifest', side, content())),
      says,
      keeps: [NEVER_DIFF],
    }),
  ),
  {
    name: 'one line of 50 MB',
    args: async () => fcDiff(await vouched('huge', 'fc', { from: huge('fc.jsonl', '{"answerUuid":"') })),
    says: /line 1: longer than 65536 bytes/,
    keeps: [NEVER_DIFF],
  },
  // No checkpoint vouches for the file, or it does not vouch for these bytes: exit 4.
  ...(
    [
      [
        'a manifest without its checkpoint',
        () => fcDiff(file('fc.jsonl', text(R.fcManifest))),
        /checkpoint .* does not exist, so the manifest cannot be shown complete/,
      ],
      [
        'the SH checkpoint given for the FC manifest',
        () => argv(DIFF, { ...DIFF_OPTS, '--fc-checkpoint': R.shCheckpoint }),
        /checkpoint .* is of a sh scan/,
      ],
      [
        'the FC manifest given as the SH one',
        () => shDiff(R.fcManifest),
        /sh manifest .*checkpoint .* is of a fc scan/,
      ],
      [
        'an incomplete checkpoint',
        () => fcDiff(withCheckpoint('fc', (c) => void ((c['completed'] = false), (c['completedAt'] = null)))),
        /records an incomplete scan/,
      ],
      [
        'a truncated checkpoint',
        () => fcDiff(withCheckpointText('fc', text(R.fcCheckpoint).slice(0, 80))),
        /not a valid manifest checkpoint \(not valid JSON\)/,
      ],
      [
        'a checkpoint that is not a checkpoint',
        () => fcDiff(withCheckpointText('fc', '{"format":"something.else"}')),
        /not a fcctl\.manifest\.checkpoint\.v1 file/,
      ],
      [
        'a checkpoint of 100,000 nested arrays',
        () => fcDiff(withCheckpointText('fc', DEEP)),
        /not a valid manifest checkpoint/,
      ],
      [
        'a checkpoint of non-UTF-8 bytes',
        () => fcDiff(withCheckpointText('fc', Buffer.from([0x7b, 0xc3, 0x28, 0x7d]))),
        /not a valid manifest checkpoint/,
      ],
      [
        'a checkpoint pointing past the end of the manifest',
        () => fcDiff(withCheckpoint('fc', (c) => void (c['outputBytes'] = (c['outputBytes'] as number) + 1))),
        /is shorter than its checkpoints record/,
      ],
      [
        'a checkpoint short of the end of the manifest',
        () => fcDiff(withCheckpoint('fc', (c) => void (c['outputBytes'] = (c['outputBytes'] as number) - 1))),
        /have SHA-256 [0-9a-f]{64}, not the [0-9a-f]{64} it recorded/,
      ],
      [
        'a checkpoint counting another number of rows',
        () => fcDiff(withCheckpoint('fc', (c) => void (c['rows'] = (c['rows'] as number) + 1))),
        /recorded \d+ rows, its bytes hold \d+/,
      ],
      [
        'a manifest whose bytes are not what the checkpoint recorded',
        () => fcDiff(flippedManifest('fc')),
        /have SHA-256 [0-9a-f]{64}, not the [0-9a-f]{64} it recorded/,
      ],
      [
        'manifests of different schools',
        async () => fcDiff(await vouched('school-6', 'fc', '', { schId: '6' })),
        /the manifests are of different scans: FC school 6/,
      ],
      [
        'a shard checkpoint against an unsharded one',
        () => fcDiff(withCheckpoint('fc', (c) => reparam(c, { shard: '1/1' }))),
        /cover different parts of the key space/,
      ],
      [
        'shard checkpoints out of order',
        () =>
          argv(DIFF, { ...DIFF_OPTS, '--fc-checkpoint': R.fcCheckpoint }).concat(`--fc-checkpoint=${R.fcCheckpoint}`),
        /an unsharded checkpoint cannot be combined/,
      ],
      [
        'a checkpoint of 50 MB on one line',
        () =>
          fcDiff(
            withCheckpointText('fc', { from: huge('cp.json', '{"format":"fcctl.manifest.checkpoint.v1","x":"', '"}') }),
          ),
        /not a valid manifest checkpoint/,
      ],
      // Issue 17: the task start is checked against the FC scan's own start (database clock).
      [
        "a --task-start at the FC scan's start",
        () => argv(DIFF, { ...DIFF_OPTS, '--task-start': fcScanStart() }),
        /--task-start .* is not before the FC scan's start .*take the task start \(SH database NOW\(\)\) before the FC scan begins/,
      ],
      [
        "a --task-start a day after the FC scan's start",
        () => argv(DIFF, { ...DIFF_OPTS, '--task-start': '2099-01-01 00:00:00' }),
        /--task-start 2099-01-01 00:00:00 is not before the FC scan's start/,
      ],
      [
        "an FC checkpoint without its scan's start (an older fcctl)",
        () => fcDiff(withCheckpoint('fc', (c) => void delete c['dbStartedAt'])),
        /does not record when its scan began in the database's clock/,
      ],
      [
        'an FC checkpoint whose scan start is no time',
        () => fcDiff(withCheckpoint('fc', (c) => void (c['dbStartedAt'] = SQL))),
        /a member is missing or of the wrong type/,
      ],
      [
        'an FC checkpoint whose scan start is an ISO time',
        () => fcDiff(withCheckpoint('fc', (c) => void (c['dbStartedAt'] = '2026-11-30T01:00:01.000Z'))),
        /a member is missing or of the wrong type/,
      ],
    ] as const
  ).map(([name, args, says]): Refusal => ({ name, args, code: 4, says, keeps: [NEVER_DIFF] })),
]);

accepted('reconcile diff', [
  // The reader checks members and types, not their order; the checkpoint vouches for the bytes.
  {
    name: 'a manifest line with its members in another order',
    args: async () =>
      argv(DIFF, {
        ...DIFF_OPTS,
        '--fc': await vouched(
          'reordered',
          'fc',
          editedManifest('fc', JSON.stringify(Object.fromEntries(Object.entries(FC_ROW()).reverse()))),
        ),
        '--out-dir': join(dir, 'diff-reordered'),
      }),
    code: 0,
    check: () => expect(text(join(dir, 'diff-reordered', 'repair-plan.jsonl'))).toBe(text(R.plan)),
  },
  {
    name: 'an --out-dir named with SQL and routing-key metacharacters',
    args: () => argv(DIFF, { ...DIFF_OPTS, '--out-dir': join(dir, `${SQL}%_*#a.b`) }),
    code: 0,
    check: () => expect(text(join(dir, `${SQL}%_*#a.b`, 'report.csv'))).toBe(text(R.report)),
  },
]);

// ---------------------------------------------------------------- reconcile run

const RUN_CMD = ['reconcile', 'run'];
const RUN_OPTS: Opts = { '--school': '5', '--form': FORM, '--out-dir': NEVER_RUN };

refusals('reconcile run', [
  ...usageCases(RUN_CMD, RUN_OPTS, ['--school', '--form', '--out-dir']).map((c) => ({ ...c, keeps: [NEVER_RUN] })),
  ...eachValue(RUN_CMD, RUN_OPTS, '--school', NOT_SCHOOLS, /--school/, { keeps: [NEVER_RUN] }),
  ...eachValue(RUN_CMD, RUN_OPTS, '--form', NOT_UUIDS, /--form/, { keeps: [NEVER_RUN] }),
  ...eachValue(RUN_CMD, RUN_OPTS, '--size', ['0', '501', ...NOT_COUNTS], /--size/, { keeps: [NEVER_RUN] }),
  ...eachValue(RUN_CMD, RUN_OPTS, '--out-dir', ['', 'a\u0000b'], /--out-dir/, { keeps: [dir] }),
  ...eachValue(RUN_CMD, RUN_OPTS, '--metrics-file', ['', 'm\u0000.prom'], /--metrics-file/, { keeps: [NEVER_RUN] }),
  ...eachValue(RUN_CMD, RUN_OPTS, '--max-load', NOT_LOADS, /--max-load/, { keeps: [NEVER_RUN] }),
  ...eachValue(RUN_CMD, RUN_OPTS, '--max-lag', ['86401', ...NOT_COUNTS], /--max-lag/, { keeps: [NEVER_RUN] }),
  {
    name: '--replica-url without --max-lag',
    args: () => argv(RUN_CMD, { ...RUN_OPTS, '--replica-url': 'mysql://u:pw@127.0.0.1:1/x' }),
    says: /--replica-url is read only by --max-lag/,
    keeps: [NEVER_RUN],
  },
  // Repeated throttle options: never "the last wins".
  {
    name: '--max-load naming a variable twice across repeats',
    args: () => [...argv(RUN_CMD, RUN_OPTS), '--max-load', 'Threads_running=5', '--max-load', 'threads_running=9'],
    says: /--max-load.*threads_running is given twice \(in two --max-load options\)/,
    keeps: [NEVER_RUN],
  },
  {
    name: '--max-lag given twice',
    args: () => [...argv(RUN_CMD, RUN_OPTS), '--max-lag', '5', '--max-lag', '9'],
    says: /--max-lag is given twice/,
    keeps: [NEVER_RUN],
  },
  {
    name: '--replica-url given twice',
    args: () => [
      ...argv(RUN_CMD, RUN_OPTS),
      '--max-lag',
      '5',
      '--replica-url',
      'mysql://u:pw@127.0.0.1:1/x',
      '--replica-url',
      'mysql://u:pw@127.0.0.1:1/y',
    ],
    says: /--replica-url is given twice/,
    keeps: [NEVER_RUN],
  },
  // Issue 17: checked before any work (exit 3): no run directory, nothing scanned.
  {
    name: '--metrics-file in a directory that does not exist',
    code: 3,
    args: () => argv(RUN_CMD, { ...RUN_OPTS, '--metrics-file': join(NEVER_DIR, 'm.prom') }),
    says: /cannot write --metrics-file .*m\.prom: directory .*never-dir does not exist; nothing was done/,
    keeps: [NEVER_RUN, NEVER_DIR],
  },
  {
    name: '--metrics-file that is a directory',
    code: 3,
    args: () => argv(RUN_CMD, { ...RUN_OPTS, '--metrics-file': join(dir, 'keep') }),
    says: /cannot write --metrics-file .*keep: it is a directory; nothing was done/,
    keeps: [NEVER_RUN, join(dir, 'keep')],
  },
  {
    name: '--metrics-file under a file',
    code: 3,
    args: () => argv(RUN_CMD, { ...RUN_OPTS, '--metrics-file': join(R.report, 'm.prom') }),
    says: /report\.csv is not a directory; nothing was done/,
    keeps: [NEVER_RUN, R.report],
  },
  {
    name: '--allow-empty given a value',
    args: () => argv(RUN_CMD, { ...RUN_OPTS, '--allow-empty': 'yes' }),
    says: /unknown option '--allow-empty=yes'/,
    keeps: [NEVER_RUN],
  },
  {
    name: '--allow-empty followed by a stray value',
    args: () => [...argv(RUN_CMD, RUN_OPTS), '--allow-empty', 'yes'],
    says: /too many arguments/,
    keeps: [NEVER_RUN],
  },
  {
    name: '--out-dir is a file',
    args: () => argv(RUN_CMD, { ...RUN_OPTS, '--out-dir': R.report }),
    says: /cannot create --out-dir .*EEXIST/,
    keeps: [R.report],
  },
  {
    name: 'no SH database configured',
    args: () => argv(RUN_CMD, RUN_OPTS),
    env: noDatabase('FCCTL_SH_DATABASE_URL'),
    says: /shDatabaseUrl is not configured/,
    keeps: [NEVER_RUN],
  },
  {
    name: 'no FC database configured',
    args: () => argv(RUN_CMD, RUN_OPTS),
    env: noDatabase('FCCTL_FC_DATABASE_URL'),
    says: /fcDatabaseUrl is not configured/,
    keeps: [NEVER_RUN],
  },
  ...(
    [
      [
        'a run directory of another school',
        (d: string) => void d,
        { '--school': '6' },
        /holds a run of other parameters \(school 5/,
      ],
      [
        'a run.json that is not JSON',
        (d: string) => writeFileSync(join(d, 'run.json'), '{"format":'),
        {},
        /run\.json is not a valid fcctl\.reconcile\.run\.v1 file/,
      ],
      [
        'a run.json of 100,000 nested arrays',
        (d: string) => writeFileSync(join(d, 'run.json'), DEEP),
        {},
        /is not a valid fcctl\.reconcile\.run\.v1 file/,
      ],
      [
        'a run.json whose params were edited',
        (d: string) =>
          editJson(join(d, 'run.json'), (r) => void ((r['params'] as Record<string, unknown>)['schId'] = '6')),
        {},
        /paramsDigest does not match params/,
      ],
      [
        'a run.json with an impossible task start',
        (d: string) => editJson(join(d, 'run.json'), (r) => void (r['taskStart'] = SQL)),
        {},
        /is not a valid fcctl\.reconcile\.run\.v1 file/,
      ],
      [
        'a run directory held by a live run',
        (d: string) => writeFileSync(join(d, 'reconcile.lock'), liveLock('reconcile run')),
        {},
        /held by a running reconcile run/,
      ],
      [
        'a stopped run whose FC checkpoint was truncated',
        (d: string) => {
          editJson(join(d, 'run.json'), (r) => void (r['state'] = 'scanning'));
          writeFileSync(join(d, 'fc-manifest.checkpoint.json'), '{"format":"fcctl.man');
        },
        {},
        /fc-manifest\.checkpoint\.json is not a valid manifest checkpoint/,
      ],
      [
        'a stopped run whose SH manifest is shorter than its checkpoint',
        (d: string) => {
          editJson(join(d, 'run.json'), (r) => void (r['state'] = 'scanning'));
          writeFileSync(join(d, 'sh-manifest.jsonl'), '');
        },
        {},
        /sh-manifest\.jsonl is 0 bytes, shorter than/,
      ],
    ] as const
  ).map(
    ([name, edit, opts, says]): Refusal => ({
      name,
      code: 4,
      says,
      args: () => argv(RUN_CMD, { ...RUN_OPTS, ...opts, '--out-dir': runDirCopy(edit) }),
    }),
  ),
]);

accepted('reconcile run', [
  // Issue 17: the refusal of an unreadable run.json says "pass --restart", so --restart gets past it.
  ...(
    [
      ['a run.json that is not JSON, with --restart', (d: string) => writeFileSync(join(d, 'run.json'), '{"format":')],
      ['a run.json of 100,000 nested arrays, with --restart', (d: string) => writeFileSync(join(d, 'run.json'), DEEP)],
      [
        'a run.json whose params were edited, with --restart',
        (d: string) =>
          editJson(join(d, 'run.json'), (r) => void ((r['params'] as Record<string, unknown>)['schId'] = '6')),
      ],
    ] as const
  ).map(([name, edit]): Accepted => {
    let out = '';
    return {
      name,
      args: () => {
        out = runDirCopy(edit);
        return [...argv(RUN_CMD, { ...RUN_OPTS, '--out-dir': out }), '--restart'];
      },
      code: 0,
      check: (r) => {
        expect(summaryOf(r)).toMatchObject({ exitCode: 0, resumed: false });
        expect(JSON.parse(text(join(out, 'run.json')))).toMatchObject({
          format: 'fcctl.reconcile.run.v1',
          state: 'completed',
        });
      },
    };
  }),
  {
    name: '--allow-empty on a pair that has rows',
    args: () => [...argv(RUN_CMD, { ...RUN_OPTS, '--out-dir': join(dir, 'runs', 'allow-empty') }), '--allow-empty'],
    code: 0,
    check: (r) => expect(summaryOf(r)).toMatchObject({ exitCode: 0, fcRows: 6 }),
  },
]);

describe('reconcile run: a school and form with no rows on either side (a typo in a cron line)', () => {
  test.each([
    ['a form no answer has', { '--form': U(98) }],
    ['a school no answer has', { '--school': '77' }],
  ] as const)('%s: exit 1 and one warning line, nothing changed; --allow-empty: exit 0', async (name, opts) => {
    const before = await checksums();
    const r = await runCli(
      [
        '--json',
        ...argv(RUN_CMD, { ...RUN_OPTS, ...opts, '--out-dir': join(dir, 'runs', `empty-${name.length}-${++fileNo}`) }),
      ],
      { env },
    );
    const ok =
      r.code === 1 &&
      /^fcctl: warning: no rows at FC or SH for school \d+ form [0-9a-f-]+: a wrong --school or --form\? \(pass --allow-empty if the pair is empty on purpose\)\n$/.test(
        r.stderr,
      );
    recordTotals(`bad-input: reconcile run: ${name}`, {
      badInputsTried: 1,
      badInputsRefused: ok ? 1 : 0,
      badInputsMishandled: ok ? 0 : 1,
    });
    expect({ code: r.code, stderr: r.stderr }).toEqual({
      code: 1,
      stderr: expect.stringMatching(
        /^fcctl: warning: no rows at FC or SH for school \d+ form [0-9a-f-]+: a wrong --school or --form\? \(pass --allow-empty if the pair is empty on purpose\)\n$/,
      ),
    });
    expect(summaryOf(r)).toMatchObject({ exitCode: 1, empty: true, fcRows: 0, shRows: 0 });
    const allowed = await runCli(
      [
        '--json',
        ...argv(RUN_CMD, { ...RUN_OPTS, ...opts, '--out-dir': join(dir, 'runs', `empty-allowed-${++fileNo}`) }),
        '--allow-empty',
      ],
      { env },
    );
    expect({ code: allowed.code, stderr: allowed.stderr }).toEqual({ code: 0, stderr: '' });
    expect(await checksums()).toBe(before);
  });
});

// ---------------------------------------------------------------- retire-absent prove

const PROVE = ['retire-absent', 'prove'];
const PROVE_OPTS: Opts = { '--candidates': R.candidates, '--fc-manifest': R.fcManifest, '--out': NEVER_PROOF };
const proveWith = (opts: Opts) => argv(PROVE, { ...PROVE_OPTS, ...opts });
const CANDIDATE = () => objects(R.candidates)[0]!;
const candidates = (...rows: object[]) => file('retire-candidates.jsonl', jsonl(rows));
/** Candidate files that are refused (exit 2, naming the line). */
const BAD_CANDIDATES: ReadonlyArray<readonly [string, () => string, RegExp]> = [
  ['a line that is not JSON', () => file('c.jsonl', `${lines(R.candidates)[0]}\n{oops\n`), /line 2: not valid JSON/],
  ['a line that is an array', () => file('c.jsonl', '[]\n'), /line 1: not a JSON object/],
  [
    'expectedRevision as a number',
    () => candidates({ ...CANDIDATE(), expectedRevision: 3 }),
    /line 1: expectedRevision must be a whole number as text/,
  ],
  [
    'expectedRevision of 20 digits',
    () => candidates({ ...CANDIDATE(), expectedRevision: '99999999999999999999' }),
    /line 1: expectedRevision must be/,
  ],
  [
    'expectedIsDeleted as 0',
    () => candidates({ ...CANDIDATE(), expectedIsDeleted: 0 }),
    /line 1: expectedIsDeleted must be true or false/,
  ],
  ['schId 0', () => candidates({ ...CANDIDATE(), schId: '0' }), /line 1: schId must be a positive whole number/],
  ['a form that is no UUID', () => candidates({ ...CANDIDATE(), formUuid: SQL }), /line 1: formUuid must be a UUID/],
  ['a task start that is no time', () => candidates({ ...CANDIDATE(), taskStart: '%' }), /line 1: taskStart must be/],
  [
    'localCreateTime not a time',
    () => candidates({ ...CANDIDATE(), localCreateTime: '2026-10-01' }),
    /line 1: localCreateTime must be null or/,
  ],
  [
    'a member missing',
    () => candidates(without(CANDIDATE() as Opts, 'expectedHash')),
    /line 1: member expectedHash is missing/,
  ],
  ['an answer twice', () => candidates(CANDIDATE(), CANDIDATE()), /line 2: answer .* is listed twice/],
  [
    'two schools',
    () => candidates(CANDIDATE(), { ...CANDIDATE(), answerUuid: U(98), schId: '6' }),
    /line 2: school 6, .*one reconcile task/,
  ],
  [
    'local-ahead rows given as candidates',
    () => candidates({ ...CANDIDATE(), category: 'LOCAL_AHEAD' }),
    /line 1: category "LOCAL_AHEAD" is not ABSENT_AT_FC/,
  ],
  [
    'a category of 100,000 nested arrays',
    () => file('c.jsonl', `${JSON.stringify(CANDIDATE()).replace('"ABSENT_AT_FC"', DEEP)}\n`),
    /line 1: category of type array is not ABSENT_AT_FC/,
  ],
  ['the repair plan given as candidates', () => R.plan, /line 1: member localCreateTime is missing/],
  ['the report CSV given as candidates', () => R.report, /line 1: not valid JSON/],
  ['bytes that are not UTF-8', () => file('c.jsonl', Buffer.from([0x7b, 0xff, 0x7d, 0x0a])), /is not UTF-8 text/],
  ['a line of 100,000 nested arrays', () => file('c.jsonl', `${DEEP}\n`), /line 1: not a JSON object/],
  ['one line of 50 MB', () => huge('c.jsonl', '{"answerUuid":"', '"}\n'), /line 1: member schId is missing/],
  ['a file over the 64 MiB limit', () => sparse('c.jsonl', 65 * 1024 * 1024), /over the 67108864-byte limit/],
];

refusals('retire-absent prove', [
  ...usageCases(PROVE, PROVE_OPTS, ['--candidates', '--fc-manifest', '--out']),
  ...(['--execute', '--evidence=x', '--run-id=r', `--proof=${PROOF}`] as const).map((flag) => ({
    name: `${flag.split('=')[0]} of retire-absent`,
    args: () => [...argv(PROVE, PROVE_OPTS), flag],
    says: /belongs to `retire-absent`, not `retire-absent prove`/,
    keeps: [NEVER_PROOF],
  })),
  ...eachValue(PROVE, PROVE_OPTS, '--proof-id', NOT_IDS, /--proof-id/, { keeps: [NEVER_PROOF] }),
  ...eachValue(PROVE, PROVE_OPTS, '--task-id', NOT_IDS, /--task-id/, { keeps: [NEVER_PROOF] }),
  ...['--candidates', '--fc-manifest', '--fc-checkpoint', '--out'].flatMap((o) =>
    eachValue(PROVE, PROVE_OPTS, o, ['', 'a\u0000b'], new RegExp(escapeRe(o)), { keeps: [NEVER_PROOF] }),
  ),
  {
    name: '--out exists (never overwritten)',
    args: () => proveWith({ '--out': PROOF }),
    says: /--out .*proof\.json exists; a proof is never overwritten/,
    keeps: [PROOF],
  },
  {
    name: '--out in a directory that does not exist',
    args: () => proveWith({ '--out': join(NEVER_DIR, 'p.json') }),
    says: /directory .* does not exist/,
    keeps: [NEVER_DIR],
  },
  {
    name: '--candidates that does not exist',
    args: () => proveWith({ '--candidates': join(dir, 'nope.jsonl') }),
    says: /cannot read candidates .*ENOENT/,
    keeps: [NEVER_PROOF],
  },
  {
    name: '--candidates that is a directory',
    args: () => proveWith({ '--candidates': RUN }),
    says: /candidates .* is not a file/,
    keeps: [NEVER_PROOF],
  },
  {
    name: '--fc-manifest that does not exist',
    args: () => proveWith({ '--fc-manifest': join(dir, 'nope.jsonl') }),
    says: /cannot read fc manifest .*no such file/,
    keeps: [NEVER_PROOF],
  },
  {
    name: 'no FC database configured',
    args: () => argv(PROVE, PROVE_OPTS),
    env: noDatabase('FCCTL_FC_DATABASE_URL'),
    says: /fcDatabaseUrl is not configured/,
    keeps: [NEVER_PROOF],
  },
  ...BAD_CANDIDATES.map(
    ([name, path, says]): Refusal => ({
      name: `candidates: ${name}`,
      args: () => proveWith({ '--candidates': path(), '--task-id': 't-1' }),
      says,
      keeps: [NEVER_PROOF],
    }),
  ),
  {
    name: 'no --task-id and no run.json beside the candidates',
    args: () => proveWith({ '--candidates': candidatesBeside(null) }),
    says: /no --task-id given and no run\.json beside the candidates/,
    keeps: [NEVER_PROOF],
  },
  {
    name: 'a run.json beside the candidates that is not JSON',
    args: () => proveWith({ '--candidates': candidatesBeside('{') }),
    says: /run\.json is not JSON; pass --task-id/,
    keeps: [NEVER_PROOF],
  },
  {
    name: 'a run.json beside the candidates without a run id',
    args: () =>
      proveWith({ '--candidates': candidatesBeside(JSON.stringify({ ...JSON.parse(text(R.runJson)), runId: '' })) }),
    says: /is not a fcctl\.reconcile\.run\.v1 file with a run id/,
    keeps: [NEVER_PROOF],
  },
  {
    name: 'a run.json of another task start',
    code: 4,
    args: () =>
      proveWith({
        '--candidates': candidatesBeside(
          JSON.stringify({ ...JSON.parse(text(R.runJson)), taskStart: '2026-01-01 00:00:00' }),
        ),
      }),
    says: /is of the run with task start 2026-01-01 00:00:00.*not of the same reconcile task/,
    keeps: [NEVER_PROOF],
  },
  {
    name: 'an FC manifest with a bad line',
    args: async () =>
      proveWith({
        '--fc-manifest': await vouched(
          'fc-bad',
          'fc',
          editedManifest('fc', JSON.stringify({ ...FC_ROW(), answerUuid: 1 })),
          { database: fcDatabase() },
        ),
        '--task-id': 't',
      }),
    says: /line 1: answerUuid must be/,
    keeps: [NEVER_PROOF],
  },
  // The FC manifest must be the complete, vouched-for output of a scan of this FC database (exit 4).
  ...(
    [
      [
        'an FC manifest of an incomplete scan',
        () =>
          proveWith({
            '--fc-manifest': withCheckpoint('fc', (c) => void ((c['completed'] = false), (c['completedAt'] = null))),
          }),
        /records an incomplete scan/,
      ],
      [
        'an FC manifest without a checkpoint',
        () => proveWith({ '--fc-manifest': file('fc.jsonl', text(R.fcManifest)) }),
        /does not exist, so the manifest cannot be shown complete/,
      ],
      [
        '--fc-checkpoint that does not exist',
        () => proveWith({ '--fc-checkpoint': join(dir, 'nope.checkpoint.json') }),
        /does not exist, so the manifest cannot be shown complete/,
      ],
      [
        'the SH manifest given as the FC one',
        () => proveWith({ '--fc-manifest': R.shManifest }),
        /checkpoint .* is of a sh scan/,
      ],
      [
        'an FC manifest whose bytes changed',
        () => proveWith({ '--fc-manifest': flippedManifest('fc') }),
        /have SHA-256 [0-9a-f]{64}, not the [0-9a-f]{64} it recorded/,
      ],
      [
        'an FC manifest of another school',
        async () => proveWith({ '--fc-manifest': await vouched('fc-6', 'fc', '', { schId: '6' }), '--task-id': 't' }),
        /is of school 6 form .*, the candidates of school 5/,
      ],
      [
        'an FC manifest scanned from another FC database',
        async () =>
          proveWith({
            '--fc-manifest': await vouched('fc-elsewhere', 'fc', text(R.fcManifest), { database: 'elsewhere:3306/fc' }),
            '--task-id': 't',
          }),
        /was scanned from elsewhere:3306\/fc .*absence must be checked where the manifest came from/,
      ],
      [
        'an FC manifest holding a candidate',
        async () =>
          proveWith({
            '--fc-manifest': await vouched(
              'fc-holds',
              'fc',
              fcManifestWith({ ...FC_ROW(), answerUuid: CANDIDATE()['answerUuid'] }),
              { database: fcDatabase() },
            ),
            '--task-id': 't',
          }),
        /holds candidate .*the candidates are not from this manifest/,
      ],
      [
        'an FC manifest of one shard only',
        () => proveWith({ '--fc-manifest': withCheckpoint('fc', (c) => reparam(c, { shard: '1/2' })) }),
        /covers shards 1\/2 only, not the whole key space/,
      ],
    ] as const
  ).map(([name, args, says]): Refusal => ({ name, args, code: 4, says, keeps: [NEVER_PROOF] })),
]);

accepted('retire-absent prove', [
  // Ids are audit references (no control characters, no surrounding spaces): other characters are text.
  ...HOSTILE.filter((v) => !v.includes('\u0000')).map(
    (v, i): Accepted => ({
      name: `--proof-id ${shown(v)} is written verbatim into the proof`,
      args: () => proveWith({ '--proof-id': v, '--out': join(dir, 'proofs', `id-${i}.json`) }),
      code: 0,
      check: () => expect(JSON.parse(text(join(dir, 'proofs', `id-${i}.json`)))).toMatchObject({ proofId: v }),
    }),
  ),
  {
    name: `--task-id ${shown(SQL)} is written verbatim into the proof`,
    args: () => proveWith({ '--task-id': SQL, '--out': join(dir, 'proofs', 'task-sql.json') }),
    code: 0,
    check: () => expect(JSON.parse(text(join(dir, 'proofs', 'task-sql.json')))).toMatchObject({ taskId: SQL }),
  },
  {
    name: 'an empty candidates file: no proof, nothing to do',
    args: () => proveWith({ '--candidates': file('c.jsonl', ''), '--out': join(dir, 'proofs', 'empty.json') }),
    code: 0,
    check: (r) => {
      expect(summaryOf(r)).toMatchObject({ written: false, candidates: 0 });
      expect(existsSync(join(dir, 'proofs', 'empty.json'))).toBe(false);
    },
  },
]);

// ---------------------------------------------------------------- retire-absent

const RETIRE = ['retire-absent'];
const RETIRE_OPTS: Opts = { '--proof': PROOF };
const retireWith = (proof: string, opts: Opts = {}) => argv(RETIRE, { ...RETIRE_OPTS, '--proof': proof, ...opts });
/** Files that are no retire proof at all (exit 2, no evidence written). */
const NOT_PROOFS: ReadonlyArray<readonly [string, () => string, RegExp]> = [
  ['an empty file', () => file('p.json', ''), /is not a strict JSON document/],
  [
    'bytes that are not UTF-8',
    () =>
      file(
        'p.json',
        Buffer.concat([
          Buffer.from(text(PROOF).slice(0, 30)),
          Buffer.from([0xff, 0xfe]),
          Buffer.from(text(PROOF).slice(30)),
        ]),
      ),
    /is not UTF-8 text, so not a retire proof/,
  ],
  [
    'a truncated proof',
    () => file('p.json', text(PROOF).slice(0, text(PROOF).length / 2)),
    /is not a strict JSON document/,
  ],
  ['a duplicate member', () => file('p.json', text(PROOF).replace('{', '{"proofId":"x",')), /DUPLICATE_KEY/],
  ['trailing data', () => file('p.json', `${text(PROOF)}{}`), /is not a strict JSON document/],
  ['a JSON array', () => file('p.json', '[]'), /is not a JSON object/],
  ['no format member', () => file('p.json', '{}'), /has no "format": "fcctl\.retire-proof\.v1" member/],
  ['a format of SQL', () => file('p.json', JSON.stringify({ format: SQL })), /has no "format"/],
  [
    'another format version',
    () => file('p.json', text(PROOF).replace('fcctl.retire-proof.v1', 'fcctl.retire-proof.v2')),
    /is a "fcctl\.retire-proof\.v2" proof; this fcctl reads fcctl\.retire-proof\.v1 only/,
  ],
  ['a reconcile summary', () => join(RUN, 'summary.json'), /has no "format"/],
  ['100,000 nested arrays', () => file('p.json', DEEP), /is not a strict JSON document \(TOO_DEEP/],
  [
    'one line of 50 MB',
    () => huge('p.json', '{"format":"fcctl.retire-proof.v1","pad":"', ''),
    /is not a strict JSON document/,
  ],
  [
    'a file over the 64 MiB limit',
    () => sparse('p.json', 65 * 1024 * 1024),
    /over the 67108864-byte limit of a retire proof/,
  ],
];
/** v1 proofs refused as a whole (exit 4): nothing retired; with --execute one audit row records the refusal, without it nothing is written. */
const REFUSED_PROOFS: ReadonlyArray<readonly [string, () => string, RegExp, Opts?]> = [
  [
    'tampered: an expected hash changed, digest kept',
    () => tampered('p.json', (p) => void (entries(p)[0]!['expectedHash'] = 'a'.repeat(64))),
    /\(PROOF_DIGEST\).*it was changed after prove wrote it/,
  ],
  [
    'tampered: another school, digest kept',
    () => tampered('p.json', (p) => void (p['schId'] = '6')),
    /\(PROOF_DIGEST\)/,
  ],
  [
    'tampered: an entry removed, digest kept',
    () => tampered('p.json', (p) => void entries(p).pop()),
    /\(PROOF_DIGEST\)/,
  ],
  [
    'the digest of another proof',
    () => tampered('p.json', (p) => void (p['digest'] = proofDigest({ ...p, proofId: 'other' }))),
    /\(PROOF_DIGEST\)/,
  ],
  ['no digest', () => tampered('p.json', (p) => void delete p['digest']), /\(PROOF_DIGEST\).*no digest member/],
  [
    'a digest in upper case',
    () => tampered('p.json', (p) => void (p['digest'] = (p['digest'] as string).toUpperCase())),
    /\(PROOF_DIGEST\)/,
  ],
  ['a digest of SQL', () => tampered('p.json', (p) => void (p['digest'] = SQL)), /\(PROOF_DIGEST\)/],
  [
    'resealed with an extra member',
    () => resealed('p.json', (p) => void (p['note'] = 'x')),
    /\(PROOF_INVALID\).*unexpected member "note"/,
  ],
  [
    'resealed with an entry created after the task start',
    () => resealed('p.json', (p) => void (entries(p)[0]!['localCreateTime'] = '2099-01-01 00:00:00')),
    /\(PROOF_INVALID\).*after the task start/,
  ],
  [
    'resealed with an answer twice',
    () => resealed('p.json', (p) => void entries(p).push(entries(p)[0]!)),
    /\(PROOF_INVALID\).*appears twice/,
  ],
  [
    'resealed with a revision as a number',
    () => resealed('p.json', (p) => void (entries(p)[0]!['expectedRevision'] = 3)),
    /\(PROOF_INVALID\).*expectedRevision is not a whole number as text/,
  ],
  [
    'resealed with a school of SQL',
    () => resealed('p.json', (p) => void (p['schId'] = SQL)),
    /\(PROOF_INVALID\).*schId is not a positive whole number/,
  ],
  [
    'resealed with a proof id of 129 characters',
    () => resealed('p.json', (p) => void (p['proofId'] = 'x'.repeat(129))),
    /\(PROOF_INVALID\).*proofId is longer than 128/,
  ],
  [
    'expired: made two days ago',
    () =>
      resealed('p.json', (p) => {
        p['createdAt'] = hoursAgo(48);
        (p['fcManifest'] as Record<string, unknown>)['completedAt'] = hoursAgo(48);
      }),
    /\(PROOF_EXPIRED\)/,
  ],
  [
    'expired: its FC manifest completed two days ago',
    () => resealed('p.json', (p) => void ((p['fcManifest'] as Record<string, unknown>)['completedAt'] = hoursAgo(48))),
    /\(PROOF_EXPIRED\)/,
  ],
  [
    'older than --max-proof-age',
    () => resealed('p.json', (p) => void (p['createdAt'] = hoursAgo(1))),
    /\(PROOF_EXPIRED\)/,
    { '--max-proof-age': '30m' },
  ],
  [
    'made an hour in the future',
    () => resealed('p.json', (p) => void (p['createdAt'] = hoursAgo(-1))),
    /\(PROOF_EXPIRED\)/,
  ],
  [
    'made against another FC database',
    () => resealed('p.json', (p) => void (p['fcDatabase'] = 'elsewhere:3306/fc')),
    /\(FC_DATABASE\).*elsewhere:3306\/fc/,
  ],
];

refusals('retire-absent', [
  { name: 'without --proof', args: () => [...RETIRE], says: /give --proof FILE/ },
  { name: 'without --proof, with --execute', args: () => [...RETIRE, '--execute'], says: /give --proof FILE/ },
  ...usageCases(RETIRE, RETIRE_OPTS, []),
  ...eachValue(RETIRE, RETIRE_OPTS, '--max-proof-age', [
    '0',
    '31d',
    '2592001',
    '1w',
    '1.5h',
    '-1h',
    ...NOT_COUNTS,
    HUGE_ARG,
    ...HOSTILE,
  ]),
  ...eachValue(RETIRE, RETIRE_OPTS, '--run-id', [...NOT_IDS.filter((v) => v !== 'x'.repeat(129)), 'x'.repeat(65)]),
  ...['--proof', '--evidence'].flatMap((o) => eachValue(RETIRE, RETIRE_OPTS, o, ['', 'a\u0000b'])),
  {
    name: '--proof that does not exist',
    args: () => retireWith(join(dir, 'nope.json')),
    says: /cannot read proof .*ENOENT/,
  },
  { name: '--proof that is a directory', args: () => retireWith(RUN), says: /proof .* is not a file/ },
  {
    name: '--evidence in a directory that does not exist',
    args: () => retireWith(PROOF, { '--evidence': join(NEVER_DIR, 'e.jsonl') }),
    says: /cannot open evidence file .*ENOENT/,
    keeps: [NEVER_DIR],
  },
  {
    name: '--evidence is the proof itself',
    args: () => retireWith(PROOF, { '--evidence': PROOF }),
    says: /--evidence must not be the proof file itself/,
    keeps: [PROOF],
  },
  {
    name: 'no SH database configured',
    args: () => argv(RETIRE, RETIRE_OPTS),
    env: noDatabase('FCCTL_SH_DATABASE_URL'),
    says: /shDatabaseUrl is not configured/,
  },
  ...NOT_PROOFS.map(([name, path, says]): Refusal => {
    const evidence = join(dir, 'files', `never-${name.replace(/\W+/g, '-')}.evidence.jsonl`);
    return {
      name: `not a proof: ${name}`,
      args: () => retireWith(path(), { '--evidence': evidence, '--execute': true }),
      says,
      keeps: [evidence],
    };
  }),
  ...REFUSED_PROOFS.flatMap(([name, path, says, opts]): Refusal[] =>
    [false, true].map((execute) => ({
      name: `${name}${execute ? ', with --execute' : ''}`,
      code: 4,
      says,
      audits: execute ? 1 : 0,
      args: () => retireWith(path(), { ...opts, ...(execute ? { '--execute': true } : {}) }),
    })),
  ),
]);

accepted('retire-absent', [
  // The dry run reads and decides, and writes nothing.
  {
    name: 'a valid proof without --execute',
    args: () => retireWith(PROOF),
    code: 0,
    check: (r) => expect(summaryOf(r)).toMatchObject({ dryRun: true, wouldRetire: ABSENT.length, refused: 0 }),
  },
  // A well-sealed proof of another school names rows that school does not have: each is refused.
  {
    name: 'a proof resealed for another school, without --execute',
    args: () => retireWith(resealed('school-6.json', (p) => void (p['schId'] = '6'))),
    code: 1,
    check: (r) => expect(resultsOf(r).map((x) => x['reason'])).toEqual(ABSENT.map(() => 'LOCAL_MISSING')),
  },
  ...HOSTILE.filter((v) => !v.includes('\u0000')).map(
    (v): Accepted => ({
      name: `--run-id ${shown(v)}, without --execute`,
      args: () => retireWith(PROOF, { '--run-id': v }),
      code: 0,
      check: (r) => expect(summaryOf(r)).toMatchObject({ dryRun: true }),
    }),
  ),
  {
    name: 'an --evidence named with SQL and routing-key metacharacters',
    args: () => retireWith(PROOF, { '--evidence': join(dir, `${SQL}%_*#a.b.jsonl`) }),
    code: 0,
    check: () => expect(lines(join(dir, `${SQL}%_*#a.b.jsonl`)).length).toBeGreaterThan(ABSENT.length),
  },
]);

// ---------------------------------------------------------------- projection repair-authoritative

const REPAIR = ['projection', 'repair-authoritative'];
const SINGLE: Opts = {
  '--consumer': KEY,
  '--proof-id': 'INC-1',
  '--evidence': EVIDENCE,
  '--school': '5',
  '--answer': U(STALE),
  '--expected-revision': '2',
  '--expected-hash': LOCAL_HASH_5,
  '--expected-is-deleted': '0',
};
const PLAN: Opts = { '--consumer': KEY, '--proof-id': 'INC-1', '--evidence': EVIDENCE, '--plan': R.plan };
const plan = (content: string | Buffer) => argv(REPAIR, { ...PLAN, '--plan': file('plan.jsonl', content) });
const PLAN_ROW = () => objects(R.plan).find((p) => p['category'] === 'STALE_LOCAL')!;
const planOf = (...rows: object[]) => plan(jsonl(rows));
/** The v2 envelope of the stale answer as FC has it now (valid for SINGLE), with `over` changed. */
function envelope(over: Partial<DeliveryRow> = {}): string {
  const { snapshotJson, contentHash } = buildAnswerSnapshot(
    answerSource({ answerUuid: U(STALE), formUuid: FORM, revision: 3 }),
  );
  const row: DeliveryRow = {
    id: '1',
    event_id: '0e000000-0000-4000-8000-000000000001',
    event_type: 'updated',
    source_app_key: '100021',
    consumer_app_key: KEY,
    consumer_school_id: '5',
    grant_version: '1',
    form_uuid: FORM,
    form_version: 1,
    answer_uuid: U(STALE),
    answer_revision: '3',
    is_deleted: 0,
    content_hash: contentHash,
    occurred_at: '2026-10-01 08:00:00',
    snapshot_json: snapshotJson,
    state: 'PENDING',
    retry_count: 0,
    replay_op_digest: null,
  } as DeliveryRow;
  return file('envelope.json', buildEnvelope({ ...row, ...over }, 'Asia/Shanghai'));
}
const withEnvelope = (path: string) => argv(REPAIR, { ...SINGLE, '--envelope': path });
/** Plans that are refused (exit 2, naming the line, nothing connected). */
const BAD_PLANS: ReadonlyArray<readonly [string, () => string[], RegExp]> = [
  ['a line that is not JSON', () => plan(`${lines(R.plan)[0]}\n{"category":`), /line 2: malformed JSON/],
  ['a line that is an array', () => plan('[1]\n'), /line 1: not a JSON object/],
  ['the report CSV', () => argv(REPAIR, { ...PLAN, '--plan': R.report }), /line 1: malformed JSON/],
  [
    'the retire candidates',
    () => argv(REPAIR, { ...PLAN, '--plan': R.candidates }),
    /line 1: member fcRevision is missing/,
  ],
  [
    'local-ahead rows',
    () => planOf({ ...PLAN_ROW(), category: 'LOCAL_AHEAD' }),
    /line 1: category "LOCAL_AHEAD" is not one a repair plan holds/,
  ],
  [
    'a category of SQL',
    () => planOf({ ...PLAN_ROW(), category: SQL }),
    /line 1: category .* is not one a repair plan holds/,
  ],
  [
    'a category of 100,000 nested arrays',
    () => plan(`${JSON.stringify(PLAN_ROW()).replace('"STALE_LOCAL"', DEEP)}\n`),
    /line 1: category an array is not one a repair plan holds/,
  ],
  [
    'a school of 100,000 nested arrays',
    () => plan(`${JSON.stringify({ ...PLAN_ROW(), schId: 0 }).replace('"schId":0', `"schId":${DEEP}`)}\n`),
    /line 1: schId an array is not a positive whole number/,
  ],
  [
    'an answer uuid of 50 MB',
    () =>
      argv(REPAIR, {
        ...PLAN,
        '--plan': huge(
          'plan.jsonl',
          '{"category":"STALE_LOCAL","answerUuid":"',
          `","schId":"5","formUuid":"${FORM}","expectedRevision":"2","expectedHash":"${'a'.repeat(64)}","expectedIsDeleted":false,"fcRevision":"3","fcContentHash":"${'b'.repeat(64)}","fcIsDeleted":false}\n`,
        ),
      }),
    /line 1: answerUuid "a{64}…" is not a UUID/,
  ],
  [
    'one line of 50 MB that is not JSON',
    () => argv(REPAIR, { ...PLAN, '--plan': huge('plan.jsonl', '{"category":"') }),
    /line 1: malformed JSON/,
  ],
  ['a line of 100,000 nested arrays', () => plan(`${DEEP}\n`), /line 1: not a JSON object/],
  ['schId 0', () => planOf({ ...PLAN_ROW(), schId: '0' }), /line 1: schId "0" is not a positive whole number/],
  [
    'schId of 20 digits',
    () => planOf({ ...PLAN_ROW(), schId: '99999999999999999999' }),
    /line 1: schId .* is not a positive whole number/,
  ],
  [
    'an answer that is no UUID',
    () => planOf({ ...PLAN_ROW(), answerUuid: '%' }),
    /line 1: answerUuid "%" is not a UUID/,
  ],
  ['a form that is no UUID', () => planOf({ ...PLAN_ROW(), formUuid: '*' }), /line 1: formUuid "\*" is not a UUID/],
  [
    'a revision as a float',
    () => planOf({ ...PLAN_ROW(), expectedRevision: 1.5 }),
    /line 1: expectedRevision 1\.5 is not a whole number/,
  ],
  [
    'a revision of 1e309',
    () => plan(`${JSON.stringify(PLAN_ROW()).replace(/"expectedRevision":"\d+"/, '"expectedRevision":1e309')}\n`),
    /line 1: expectedRevision Infinity is not a whole number/,
  ],
  [
    'an upper-case hash',
    () => planOf({ ...PLAN_ROW(), fcContentHash: 'A'.repeat(64) }),
    /line 1: fcContentHash must be 64 lowercase hex/,
  ],
  ['half a triple', () => planOf({ ...PLAN_ROW(), expectedHash: null }), /line 1: .*must be all null .*or all set/],
  [
    'a MISSING_LOCAL line with a triple',
    () => planOf({ ...PLAN_ROW(), category: 'MISSING_LOCAL' }),
    /line 1: a MISSING_LOCAL line must have a null expected triple/,
  ],
  ['isDeleted as 0', () => planOf({ ...PLAN_ROW(), fcIsDeleted: 0 }), /line 1: fcIsDeleted must be true or false/],
  ['a member missing', () => planOf(without(PLAN_ROW() as Opts, 'fcRevision')), /line 1: member fcRevision is missing/],
  ['an answer twice', () => planOf(PLAN_ROW(), PLAN_ROW()), /line 2: answer .* is already on line 1/],
  [
    'a line of another school than --school',
    () => argv(REPAIR, { ...PLAN, '--school': '6', '--plan': file('plan.jsonl', jsonl([PLAN_ROW()])) }),
    /line 1: school 5 is not --school 6/,
  ],
  ['bytes that are not UTF-8', () => plan(Buffer.from([0x7b, 0xff, 0x7d, 0x0a])), /not UTF-8 text/],
];
/** Envelopes that are refused (exit 2). */
const BAD_ENVELOPES: ReadonlyArray<readonly [string, () => string, RegExp]> = [
  ['an empty file', () => file('e.json', ''), /--envelope is not JSON/],
  ['not JSON', () => file('e.json', '{"protocolVersion":'), /--envelope is not JSON/],
  ['bytes that are not UTF-8', () => file('e.json', Buffer.from([0x7b, 0xff, 0x7d])), /--envelope is not JSON/],
  ['100,000 nested arrays', () => file('e.json', DEEP), /--envelope refused: NOT_AN_OBJECT/],
  [
    'a member missing',
    () => file('e.json', text(envelope()).replace(/"grantVersion":\d+,/, '')),
    /--envelope refused: MISSING_MEMBER/,
  ],
  [
    'an extra member',
    () => file('e.json', text(envelope()).replace('{', `{"note":${JSON.stringify(SQL)},`)),
    /--envelope refused: EXTRA_MEMBER/,
  ],
  [
    'a hash that does not match the snapshot',
    () => envelope({ content_hash: 'c'.repeat(64) }),
    /--envelope refused: SNAPSHOT_HASH_MISMATCH/,
  ],
  ['an event id of 37 characters', () => envelope({ event_id: 'e'.repeat(37) }), /--envelope refused: .*eventId/],
  ['another answer', () => envelope({ answer_uuid: U(1) }), /is not --answer/],
  ['another consumer', () => envelope({ consumer_app_key: '100101' }), /consumerAppKey "100101" is not --consumer/],
  [
    'a consumer key with routing-key wildcards',
    () => envelope({ consumer_app_key: 'a.*#' }),
    /--envelope refused: INVALID_ROUTING_KEY/,
  ],
  ['another school', () => envelope({ consumer_school_id: '6' }), /consumerSchoolId 6 is not --school 5/],
  ['school 0', () => envelope({ consumer_school_id: '0' }), /--envelope refused: INVALID_ROUTING_KEY/],
  ['a form that is no UUID', () => envelope({ form_uuid: SQL }), /formUuid .* is not a UUID/],
  ['a file over the 16 MiB limit', () => huge('e.json', '{"protocolVersion":"'), /over the 16777216-byte limit/],
];

refusals('projection repair-authoritative', [
  ...usageCases(REPAIR, SINGLE, ['--consumer', '--proof-id']).map((c) => ({ ...c, keeps: [EVIDENCE] })),
  {
    name: 'neither an answer nor a plan',
    args: () => argv(REPAIR, without(without(SINGLE, '--answer'), '--school')),
    says: /give --school and --answer .* or --plan FILE/,
    keeps: [EVIDENCE],
  },
  {
    name: 'without --school',
    args: () => argv(REPAIR, without(SINGLE, '--school')),
    says: /give --school and --answer/,
    keeps: [EVIDENCE],
  },
  {
    name: 'a plan and an answer',
    args: () => argv(REPAIR, { ...PLAN, '--answer': U(STALE) }),
    says: /--plan cannot be combined/,
    keeps: [EVIDENCE],
  },
  {
    name: 'a plan and --expect-missing',
    args: () => argv(REPAIR, { ...PLAN, '--expect-missing': true }),
    says: /--plan cannot be combined/,
    keeps: [EVIDENCE],
  },
  {
    name: 'half a triple',
    args: () => argv(REPAIR, without(SINGLE, '--expected-hash')),
    says: /give --expected-revision, --expected-hash and --expected-is-deleted/,
    keeps: [EVIDENCE],
  },
  {
    name: 'a triple and --expect-missing',
    args: () => argv(REPAIR, { ...SINGLE, '--expect-missing': true }),
    says: /--expect-missing cannot be combined/,
    keeps: [EVIDENCE],
  },
  {
    name: 'the plan and the envelope both on standard input',
    args: () => argv(REPAIR, { ...PLAN, '--plan': '-', '--envelope': '-' }),
    says: /--plan cannot be combined/,
    keeps: [EVIDENCE],
  },
  ...eachValue(
    REPAIR,
    SINGLE,
    '--consumer',
    ['', SQL, 'a b', 'a\u0000b', '\t', 'x'.repeat(65), HUGE_ARG],
    /--consumer/,
    { keeps: [EVIDENCE] },
  ),
  ...eachValue(REPAIR, SINGLE, '--proof-id', NOT_IDS, /--proof-id/, { keeps: [EVIDENCE] }),
  ...eachValue(
    REPAIR,
    SINGLE,
    '--run-id',
    ['', 'a b', 'x'.repeat(65), ...HOSTILE.filter((v) => v !== '_' && v !== 'a.b')],
    /--run-id/,
    { keeps: [EVIDENCE] },
  ),
  ...eachValue(REPAIR, SINGLE, '--school', NOT_SCHOOLS, /--school/, { keeps: [EVIDENCE] }),
  ...eachValue(REPAIR, SINGLE, '--answer', NOT_UUIDS, /--answer/, { keeps: [EVIDENCE] }),
  ...eachValue(
    REPAIR,
    SINGLE,
    '--expected-revision',
    ['abc', '-1', '1e309', '99999999999999999999', '', '1.5', '0x10', ' ', HUGE_ARG, ...HOSTILE],
    /--expected-revision/,
    { keeps: [EVIDENCE] },
  ),
  ...eachValue(
    REPAIR,
    SINGLE,
    '--expected-hash',
    ['', 'A'.repeat(64), 'a'.repeat(63), 'a'.repeat(65), HUGE_ARG, ...HOSTILE],
    /--expected-hash/,
    { keeps: [EVIDENCE] },
  ),
  ...eachValue(
    REPAIR,
    SINGLE,
    '--expected-is-deleted',
    ['', '2', '-1', 'true', 'false', ' 0', HUGE_ARG, ...HOSTILE],
    /--expected-is-deleted/,
    { keeps: [EVIDENCE] },
  ),
  ...eachValue(REPAIR, PLAN, '--concurrency', ['0', '33', ...NOT_COUNTS], /--concurrency/, { keeps: [EVIDENCE] }),
  ...eachValue(REPAIR, PLAN, '--max-rereads', ['11', ...NOT_COUNTS], /--max-rereads/, { keeps: [EVIDENCE] }),
  // (1.5 seconds is a valid --max-seconds)
  ...eachValue(
    REPAIR,
    PLAN,
    '--max-seconds',
    ['0', '0.5', '86401', ...NOT_COUNTS.filter((v) => v !== '1.5')],
    /--max-seconds/,
    { keeps: [EVIDENCE] },
  ),
  ...['--plan', '--evidence'].flatMap((o) =>
    eachValue(REPAIR, PLAN, o, ['', 'a\u0000b'], new RegExp(escapeRe(o)), { keeps: [EVIDENCE] }),
  ),
  ...eachValue(REPAIR, SINGLE, '--envelope', ['', 'a\u0000b'], /--envelope/, { keeps: [EVIDENCE] }),
  {
    name: '--plan that does not exist',
    args: () => argv(REPAIR, { ...PLAN, '--plan': join(dir, 'nope.jsonl') }),
    says: /cannot read .*nope\.jsonl: no such file/,
    keeps: [EVIDENCE],
  },
  {
    name: '--plan that is a directory',
    args: () => argv(REPAIR, { ...PLAN, '--plan': RUN }),
    says: /cannot read .*: is a directory/,
    keeps: [EVIDENCE],
  },
  {
    name: '--evidence in a directory that does not exist',
    args: () => argv(REPAIR, { ...PLAN, '--evidence': join(NEVER_DIR, 'e.jsonl') }),
    says: /--evidence .*cannot open for appending: ENOENT/,
    keeps: [NEVER_DIR],
  },
  {
    name: '--evidence that is a directory',
    args: () => argv(REPAIR, { ...PLAN, '--evidence': RUN }),
    says: /--evidence .*cannot open for appending: EISDIR/,
  },
  ...BAD_PLANS.map(([name, args, says]): Refusal => ({ name: `plan: ${name}`, args, says, keeps: [EVIDENCE] })),
  {
    name: 'plan on standard input: not JSON',
    args: () => argv(REPAIR, { ...PLAN, '--plan': '-' }),
    stdin: () => '{"category":\n',
    says: /--plan -: line 1: malformed JSON/,
    keeps: [EVIDENCE],
  },
  {
    name: 'plan on standard input: one line of 50 MB',
    args: () => argv(REPAIR, { ...PLAN, '--plan': '-' }),
    stdin: () => `{"x":"${'a'.repeat(HUGE_BYTES)}"}\n`,
    says: /--plan -: line 1: member category is missing/,
    keeps: [EVIDENCE],
  },
  ...BAD_ENVELOPES.map(
    ([name, path, says]): Refusal => ({
      name: `envelope: ${name}`,
      args: () => withEnvelope(path()),
      says,
      keeps: [EVIDENCE],
    }),
  ),
  {
    name: 'envelope on standard input: not JSON',
    args: () => withEnvelope('-'),
    stdin: () => SQL,
    says: /--envelope is not JSON/,
    keeps: [EVIDENCE],
  },
  {
    name: 'no SH database configured',
    args: () => argv(REPAIR, PLAN),
    env: noDatabase('FCCTL_SH_DATABASE_URL'),
    says: /shDatabaseUrl is not configured/,
    keeps: [EVIDENCE],
  },
  {
    name: 'no FC database configured',
    args: () => argv(REPAIR, SINGLE),
    env: noDatabase('FCCTL_FC_DATABASE_URL'),
    says: /fcDatabaseUrl is not configured/,
    keeps: [EVIDENCE],
  },
]);

accepted('projection repair-authoritative', [
  // Without --execute: the decisions, and nothing written (the plan would insert one row and update one).
  {
    name: 'a valid plan without --execute',
    args: () => argv(REPAIR, PLAN),
    code: 0,
    check: (r) => expect(summaryOf(r)).toMatchObject({ dryRun: true, wouldInsert: 1, wouldUpdate: 1 }),
  },
  {
    name: 'one answer without --execute',
    args: () => argv(REPAIR, SINGLE),
    code: 0,
    check: (r) =>
      expect(resultsOf(r)).toMatchObject([{ result: 'WOULD_APPLY', code: 'WOULD_REPAIR_STALE', written: false }]),
  },
  {
    name: 'one answer from a valid envelope without --execute',
    args: () => withEnvelope(envelope()),
    code: 0,
    check: (r) => expect(resultsOf(r)).toMatchObject([{ result: 'WOULD_APPLY', written: false }]),
  },
  {
    name: 'an empty plan: nothing to repair, no database opened',
    args: () => plan(''),
    code: 0,
    check: (r) => expect(summaryOf(r)).toMatchObject({ items: 0 }),
  },
  // A consumer key is any stored key (the grant table is looked up with it as a parameter): one no grant has is DEFERRED.
  ...HOSTILE.filter((v) => v !== SQL && !v.includes('\u0000')).map(
    (v): Accepted => ({
      name: `--consumer ${shown(v)}, without --execute`,
      args: () => argv(REPAIR, { ...SINGLE, '--consumer': v }),
      code: 1,
      check: (r) => expect(resultsOf(r)).toMatchObject([{ result: 'DEFERRED', code: 'GRANT_MISSING' }]),
    }),
  ),
  ...HOSTILE.filter((v) => !v.includes('\u0000')).map(
    (v): Accepted => ({
      name: `--proof-id ${shown(v)}, without --execute`,
      args: () => argv(REPAIR, { ...SINGLE, '--proof-id': v }),
      code: 0,
    }),
  ),
  {
    name: '--run-id of letters, digits and . _ : -',
    args: () => argv(REPAIR, { ...SINGLE, '--run-id': 'a.b_c:d-1' }),
    code: 0,
    check: (r) => expect(summaryOf(r)).toMatchObject({ runId: 'a.b_c:d-1' }),
  },
]);

// ---------------------------------------------------------------- beyond the catalogue

describe('groups without a command', () => {
  // Commander's usage text, deliberately (src/main.ts): several lines, but exit 2 and nothing done.
  for (const group of ['manifest', 'reconcile', 'projection']) {
    test(`fcctl ${group} alone shows its usage on stderr, exit 2`, async () => {
      const before = await checksums();
      const r = await runCli(['--json', group], { env });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(new RegExp(`^Usage: fcctl ${group} `));
      expect(await checksums()).toBe(before);
    });
  }
});

describe('a real process given raw non-UTF-8 bytes in argv', () => {
  /** bin/fcctl under bash, so that argv holds the bytes themselves (Node decodes them to U+FFFD). */
  const run = (script: string): Promise<CliResult> =>
    new Promise((resolve, reject) => {
      const child = spawn('bash', ['-c', script, 'bash', process.execPath, FCCTL_BIN], {
        env: cleanEnv(env) as NodeJS.ProcessEnv,
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (c: Buffer) => out.push(c));
      child.stderr.on('data', (c: Buffer) => err.push(c));
      child.on('error', reject);
      child.on('close', (code) =>
        resolve({
          code: code ?? -1,
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8'),
        }),
      );
    });
  const cases: ReadonlyArray<readonly [string, string, RegExp]> = [
    ['--school', `"$1" "$2" --json manifest page --side sh --school $'5\\xff' --form ${FORM}`, /--school/],
    ['--form', `"$1" "$2" --json reconcile run --school 5 --form $'\\xc3\\x28' --out-dir ${NEVER_RUN}`, /--form/],
    [
      '--proof (a file name that is no UTF-8)',
      `"$1" "$2" --json retire-absent --proof $'${dir}/\\xff.json'`,
      /cannot read proof .*ENOENT/,
    ],
    [
      '--concurrency (beside a --consumer of such bytes)',
      `"$1" "$2" --json projection repair-authoritative --consumer $'\\xff\\xfe' --proof-id p --plan ${R.plan} --evidence ${EVIDENCE} --concurrency $'\\xff'`,
      /--concurrency/,
    ],
  ];
  for (const [name, script, says] of cases) {
    test(name, async () => {
      const before = await checksums();
      const r = await run(script);
      const after = await checksums();
      const ok = r.code === 2 && after === before;
      recordTotals(`bad-input: raw argv bytes: ${name}`, {
        badInputsTried: 1,
        badInputsRefused: ok ? 1 : 0,
        badInputsMishandled: ok ? 0 : 1,
      });
      expect([r.code, r.stdout]).toEqual([2, '']);
      expect(r.stderr).toMatch(/^fcctl: [^\n]*\n$/);
      expect(r.stderr).toMatch(says);
      expect(after).toBe(before);
    });
  }
});

describe('hostile strings reach the databases only as parameters (with --execute)', () => {
  test('a repair whose proof id is SQL: the audit row holds the text, every table is still there', async () => {
    const r = await runCli(
      ['--json', ...argv(REPAIR, { ...SINGLE, '--proof-id': SQL, '--run-id': 'a.b_c', '--execute': true })],
      { env },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [audit] = await dbs.admin.query(
      `SELECT proof_id, run_id FROM \`${dbs.shName}\`.fc_reconcile_audit WHERE answer_uuid = ?`,
      [U(STALE)],
    );
    expect(audit).toEqual([{ proof_id: SQL, run_id: 'a.b_c' }]);
    const [answers] = await dbs.admin.query(`SELECT COUNT(*) AS n FROM \`${dbs.fcName}\`.answer`);
    expect(answers).toEqual([{ n: String(SYNCED.length + 2) }]);
  });

  test('a retirement whose run id is SQL with wildcards: every row retired once, the audit holds the text', async () => {
    const runId = `${SQL} %_*#`;
    const r = await runCli(['--json', ...retireWith(PROOF, { '--run-id': runId, '--execute': true })], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(summaryOf(r)).toMatchObject({ retired: ABSENT.length });
    // the entries' rows (the refused proofs above are recorded as rows without an answer)
    const [audit] = await dbs.admin.query(
      `SELECT DISTINCT run_id, proof_id FROM \`${dbs.shName}\`.fc_reconcile_audit WHERE action = 'RETIRE_ABSENT' AND answer_uuid IS NOT NULL`,
    );
    expect(audit).toEqual([{ run_id: runId, proof_id: 'rp-bad-input' }]);
    const [retired] = await dbs.admin.query(
      `SELECT COUNT(*) AS n FROM \`${dbs.shName}\`.fc_answer_projection WHERE retire_proof_id = 'rp-bad-input'`,
    );
    expect(retired).toEqual([{ n: String(ABSENT.length) }]);
  });
});
