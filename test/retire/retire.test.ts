import { databaseIdentity } from '../../src/lib/db/identity.js';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { describe, expect } from 'vitest';
import { MAX_PROOF_BYTES, PROOF_FORMAT, PROOF_FORMAT_DOC, proofDigest } from '../../src/lib/retire-absent/decide.js';
import { checksumTables } from '../helpers/checksum.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { type TestDatabases, testMysqlUrl } from '../helpers/db.js';
import { answerHash, insertAnswers, insertProjections, testUuid, writeManifestFiles } from '../helpers/manifest.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'retire', init: 'all' });

const FORM = testUuid('retire', 'form');
const U = (school: number, n: number) => testUuid('retire', school, n);
const ABSENT = [1, 2, 3, 4, 5, 6];
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;

const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const resultsOf = (stdout: string) => jsonLines(stdout).filter((l) => l['type'] === 'result');
const jsonl = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const shSum = () => checksumTables(dbs.admin, dbs.shName, ['fc_answer_projection', 'fc_reconcile_audit']);
const projectionSum = () => checksumTables(dbs.admin, dbs.shName, ['fc_answer_projection']);
const auditOfRun = (runId: string) =>
  sh(
    `SELECT action, outcome, reason, proof_id, run_id, host, sch_id, answer_uuid, expected_json, observed_json FROM $SH.fc_reconcile_audit WHERE run_id = ? ORDER BY id`,
    [runId],
  );
const auditCount = async () => Number((await sh(`SELECT COUNT(*) AS n FROM $SH.fc_reconcile_audit`))[0]!['n']);
const fcSum = () => checksumTables(dbs.admin, dbs.fcName, ['answer']);
const sh = (sql: string, params: unknown[] = []) =>
  dbs.admin
    .query(sql.replaceAll('$SH', `\`${dbs.shName}\``), params)
    .then(([r]) => r as Array<Record<string, string | number | null>>);
const cli = (args: string[], e = env) => runCli(['--json', ...args], { env: e });
/** The id and digest of school 6's proof, the one that retired its absent rows. */
const proof6 = () => JSON.parse(readFileSync(join(dir, 'proof6.json'), 'utf8')) as { proofId: string; digest: string };
/** The proof that retired the rows re-runs clean: every entry ALREADY_RETIRED, exit 0. */
async function expectRerunsClean(proof: string): Promise<void> {
  const again = await cli(['retire-absent', '--proof', proof, '--execute']);
  expect(again.code).toBe(0);
  expect(summaryOf(again.stdout)).toMatchObject({ alreadyRetired: ABSENT.length, refused: 0 });
}

/** One school: 3 answers in sync, the ABSENT ones only in the projection (created long before any task start). */
async function arrangeSchool(school: number): Promise<void> {
  const synced = [101, 102, 103].map((n) => ({ answerUuid: U(school, n), formUuid: FORM, schId: school, revision: 2 }));
  await insertAnswers(dbs.admin, dbs.fcName, synced);
  await insertProjections(dbs.admin, dbs.shName, [
    ...synced.map((a) => ({ ...a, contentHash: answerHash(a) })),
    ...ABSENT.map((n) => ({
      answerUuid: U(school, n),
      formUuid: FORM,
      schId: school,
      revision: n,
      isDeleted: n === 2 ? 1 : 0,
      createTime: `2026-10-0${n} 08:00:00`,
    })),
  ]);
}

/** `reconcile run` for one school: the candidates, manifest, checkpoint and run.json come from the real thing. */
async function reconcile(school: number): Promise<string> {
  const out = join(dir, `run-${school}`);
  const r = await cli(['reconcile', 'run', '--school', String(school), '--form', FORM, '--out-dir', out]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return out;
}

const proveArgs = (run: string, out: string, extra: string[] = []) => [
  'retire-absent',
  'prove',
  '--candidates',
  join(run, 'retire-candidates.jsonl'),
  '--fc-manifest',
  join(run, 'fc-manifest.jsonl'),
  '--out',
  out,
  ...extra,
];

/** Rewrites a proof with a correct digest after `edit` (what a forger with the algorithm could do). */
function reseal(src: string, dst: string, edit: (p: Record<string, unknown>) => void): void {
  const p = JSON.parse(readFileSync(src, 'utf8')) as Record<string, unknown>;
  edit(p);
  p['digest'] = proofDigest(p);
  writeFileSync(dst, `${JSON.stringify(p, null, 2)}\n`);
}

let run5: string;
let proof5: string;
let run6: string;

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  env = dbs.env();
  dir = tmp;
  await arrangeSchool(5);
  await arrangeSchool(6);
  run5 = await reconcile(5);
  run6 = await reconcile(6);
});

describe('retire-absent prove', () => {
  test('writes the proof of SPEC §8: format, ids, task, school/form, the FC manifest, per answer the expected values and the FC check time, a digest', async () => {
    proof5 = join(dir, 'proof5.json');
    const before = Date.now();
    const r = await cli(proveArgs(run5, proof5, ['--proof-id', 'rp-school-5']));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const run = JSON.parse(readFileSync(join(run5, 'run.json'), 'utf8')) as { runId: string; taskStart: string };
    const cp = JSON.parse(readFileSync(join(run5, 'fc-manifest.checkpoint.json'), 'utf8')) as {
      sha256: string;
      completedAt: string;
      rows: number;
      outputBytes: number;
    };
    const p = JSON.parse(readFileSync(proof5, 'utf8')) as Record<string, unknown>;
    expect(Object.keys(p)).toEqual([
      'format',
      'formatDoc',
      'proofId',
      'taskId',
      'taskStart',
      'schId',
      'formUuid',
      'createdAt',
      'fcDatabase',
      'fcManifest',
      'candidates',
      'entries',
      'excluded',
      'digest',
    ]);
    expect(p).toMatchObject({
      format: PROOF_FORMAT,
      formatDoc: PROOF_FORMAT_DOC,
      proofId: 'rp-school-5',
      taskId: run.runId,
      taskStart: run.taskStart,
      schId: '5',
      formUuid: FORM,
      fcDatabase: databaseIdentity(dbs.fcUrl),
      fcManifest: {
        path: join(run5, 'fc-manifest.jsonl'),
        checkpoints: [join(run5, 'fc-manifest.checkpoint.json')],
        rows: 3,
        bytes: cp.outputBytes,
        sha256: cp.sha256,
        completedAt: cp.completedAt,
      },
      candidates: { path: join(run5, 'retire-candidates.jsonl'), rows: ABSENT.length },
      excluded: [],
    });
    expect(cp.rows).toBe(3);
    const entries = p['entries'] as Array<Record<string, unknown>>;
    expect(entries.map((e) => e['answerUuid'])).toEqual(ABSENT.map((n) => U(5, n)).sort());
    const e2 = entries.find((e) => e['answerUuid'] === U(5, 2))!;
    expect(Object.keys(e2)).toEqual([
      'answerUuid',
      'expectedRevision',
      'expectedHash',
      'expectedIsDeleted',
      'localCreateTime',
      'fcAbsentCheckedAt',
    ]);
    expect(e2).toMatchObject({
      expectedRevision: '2',
      expectedIsDeleted: true,
      localCreateTime: '2026-10-02 08:00:00',
    });
    const checked = Date.parse(e2['fcAbsentCheckedAt'] as string);
    expect(checked).toBeGreaterThanOrEqual(before - 1000);
    expect(checked).toBeLessThanOrEqual(Date.parse(p['createdAt'] as string));
    expect(p['digest']).toBe(proofDigest(p));
    expect(summaryOf(r.stdout)).toMatchObject({
      command: 'retire-absent prove',
      exitCode: 0,
      written: true,
      proofId: 'rp-school-5',
      entries: 6,
      excluded: 0,
      digest: p['digest'],
    });
  });

  test('never overwrites a proof: --out existing → exit 2, the file unchanged', async () => {
    const bytes = readFileSync(proof5);
    const r = await cli(proveArgs(run5, proof5));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^fcctl: --out .*proof5\.json exists; a proof is never overwritten.*\n$/);
    expect(readFileSync(proof5).equals(bytes)).toBe(true);
  });

  test('refuses an incomplete FC manifest (exit 4, no proof): checkpoint not completed, bytes or rows not what the checkpoint says, candidates in the manifest', async () => {
    const sub = join(dir, 'incomplete');
    mkdirSync(sub);
    const cands = join(run5, 'retire-candidates.jsonl');
    const args = (manifest: string, out: string, more: string[] = []) => [
      'retire-absent',
      'prove',
      '--candidates',
      cands,
      '--fc-manifest',
      manifest,
      '--out',
      out,
      '--task-id',
      't',
      ...more,
    ];
    // checkpoint not completed
    const partial = await writeManifestFiles(sub, 'partial', 'fc', [], { formUuid: FORM, completed: false });
    let r = await cli(args(partial.file, join(sub, 'p1.json')));
    expect([r.code, r.stderr]).toEqual([
      4,
      expect.stringMatching(/^fcctl: fc manifest .* records an incomplete scan .*\n$/),
    ]);
    // one byte changed (same length): SHA-256 differs
    const changed = join(sub, 'changed.jsonl');
    const bytes = readFileSync(join(run5, 'fc-manifest.jsonl'));
    const flipped = Buffer.from(bytes);
    const at = flipped.indexOf('"revision":"2"') + 12;
    flipped[at] = '3'.charCodeAt(0);
    writeFileSync(changed, flipped);
    r = await cli(args(changed, join(sub, 'p2.json'), ['--fc-checkpoint', join(run5, 'fc-manifest.checkpoint.json')]));
    expect([r.code, r.stderr]).toEqual([
      4,
      expect.stringMatching(/have SHA-256 [0-9a-f]{64}, not the [0-9a-f]{64} it recorded/),
    ]);
    // a line missing: shorter than the checkpoint
    const shorter = join(sub, 'shorter.jsonl');
    writeFileSync(shorter, bytes.subarray(0, bytes.indexOf(0x0a) + 1));
    r = await cli(args(shorter, join(sub, 'p3.json'), ['--fc-checkpoint', join(run5, 'fc-manifest.checkpoint.json')]));
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/shorter than its checkpoints record|recorded 3 rows/);
    // candidates that the manifest holds: not from this manifest
    const foreign = join(sub, 'foreign.jsonl');
    const line = JSON.parse(readFileSync(cands, 'utf8').split('\n')[0]!) as Record<string, unknown>;
    writeFileSync(foreign, `${JSON.stringify({ ...line, answerUuid: U(5, 101) })}\n`);
    r = await cli([
      'retire-absent',
      'prove',
      '--candidates',
      foreign,
      '--fc-manifest',
      join(run5, 'fc-manifest.jsonl'),
      '--out',
      join(sub, 'p4.json'),
      '--task-id',
      't',
    ]);
    expect([r.code, r.stderr]).toEqual([
      4,
      expect.stringMatching(/holds candidate .*: the candidates are not from this manifest/),
    ]);
    // another FC database than the manifest was scanned from
    r = await cli(
      proveArgs(run5, join(sub, 'p5.json')),
      dbs.env({ FCCTL_FC_DATABASE_URL: dbs.fcUrl.replace('127.0.0.1', 'localhost') }),
    );
    expect([r.code, r.stderr]).toEqual([
      4,
      expect.stringMatching(/was scanned from 127\.0\.0\.1:.*, but the configured FC database is localhost:/),
    ]);
    for (const p of ['p1', 'p2', 'p3', 'p4', 'p5']) expect(existsSync(join(sub, `${p}.json`)), p).toBe(false);
  });
});

describe('retire-absent --proof', () => {
  test('dry run: reports WOULD_RETIRE for every entry (never RETIRED, never a "retired" count), writes nothing to either database, records the decisions in the evidence file', async () => {
    const [s, f] = [await shSum(), await fcSum()];
    const evidence = join(dir, 'dry.evidence.jsonl');
    const r = await cli(['retire-absent', '--proof', proof5, '--evidence', evidence]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(resultsOf(r.stdout).map((x) => [x['result'], x['reason'], x['dryRun'], x['retiredAt']])).toEqual(
      ABSENT.map(() => ['WOULD_RETIRE', null, true, null]),
    );
    expect(resultsOf(r.stdout).every((x) => /^would retire: absent at FC/.test(x['detail'] as string))).toBe(true);
    const summary = summaryOf(r.stdout);
    expect(summary).toMatchObject({
      command: 'retire-absent',
      exitCode: 0,
      dryRun: true,
      proofId: 'rp-school-5',
      entries: 6,
      wouldRetire: 6,
      alreadyRetired: 0,
      refused: 0,
      notRun: 0,
    });
    expect(summary).not.toHaveProperty('retired');
    // no member, label or count anywhere in the output reads as an executed retirement
    expect(r.stdout).not.toMatch(/"RETIRED"|"retired"/);
    expect([await shSum(), await fcSum()]).toEqual([s, f]);
    const lines = jsonl(evidence);
    expect(lines.map((l) => l['type'])).toEqual(['run', ...ABSENT.map(() => 'decision'), 'end']);
    expect(lines[1]).toMatchObject({
      result: 'WOULD_RETIRE',
      dryRun: true,
      fc: { present: false },
      expected: { proofId: 'rp-school-5' },
    });
    expect(lines.at(-1)!['counts']).toEqual({ WOULD_RETIRE: 6, ALREADY_RETIRED: 0, REFUSED: 0 });
  });

  test('dry run on a terminal: the table and the summary say WOULD_RETIRE and wouldRetire, never RETIRED', async () => {
    const s = await shSum();
    const r = await runCli(['retire-absent', '--proof', proof5, '--evidence', join(dir, 'dry-tty.evidence.jsonl')], {
      env,
      tty: true,
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/would do \(dry run\)/);
    expect(r.stdout.match(/WOULD_RETIRE/g)).toHaveLength(ABSENT.length);
    expect(r.stdout).toMatch(/wouldRetire\s+6/);
    expect(r.stdout).not.toMatch(/\bRETIRED\b|\bretired\b/);
    expect(await shSum()).toBe(s);
  });

  test('a proof with one byte changed → exit 4 PROOF_DIGEST, nothing retired (checksums); with --execute one audit row records the refusal', async () => {
    const original = readFileSync(proof5);
    const text = original.toString('utf8');
    const [s, f, audits] = [await projectionSum(), await fcSum(), await auditCount()];
    const spots = [
      text.indexOf('"expectedRevision":"') + 20,
      text.indexOf('"expectedHash":"') + 16,
      text.indexOf('"proofId": "') + 14,
      text.indexOf('"localCreateTime":"') + 19,
    ];
    expect(spots.every((at) => at > 30)).toBe(true);
    for (const at of spots) {
      const bad = Buffer.from(original);
      bad[at] = bad[at] === 0x31 ? 0x32 : bad[at] === 0x61 ? 0x62 : bad[at]! ^ 0x01;
      const file = join(dir, `byte-${at}.json`);
      writeFileSync(file, bad);
      const r = await cli(['retire-absent', '--proof', file, '--execute', '--run-id', `byte-${at}`]);
      expect(r.code, `byte ${at}`).toBe(4);
      expect(r.stderr).toMatch(
        /^fcctl: proof refused \(PROOF_DIGEST\), nothing retired: .* hashes to [0-9a-f]{64}, not the digest [0-9a-f]{64} it carries; it was changed after prove wrote it\n$/,
      );
      expect(resultsOf(r.stdout).map((x) => [x['result'], x['reason']])).toEqual(
        ABSENT.map(() => ['REFUSED', 'PROOF_DIGEST']),
      );
      expect(summaryOf(r.stdout)).toMatchObject({ exitCode: 4, proofRefused: 'PROOF_DIGEST', retired: 0, refused: 6 });
      const ev = jsonl(join(dir, `byte-${at}.evidence.jsonl`));
      expect(ev.map((l) => l['type'])).toEqual(['run', 'refused-proof', ...ABSENT.map(() => 'decision'), 'end']);
      // SPEC §8: the refusal is recorded — one row for the proof, with the id the file claims
      const claimed = (JSON.parse(bad.toString('utf8')) as { proofId: string }).proofId;
      const audit = await auditOfRun(`byte-${at}`);
      expect(audit).toEqual([
        expect.objectContaining({
          action: 'RETIRE_ABSENT',
          outcome: 'REFUSED',
          reason: expect.stringMatching(/^PROOF_DIGEST: proof .*byte-\d+\.json: the content hashes to/),
          proof_id: claimed,
          host: hostname(),
          sch_id: '5',
          answer_uuid: null,
        }),
      ]);
      expect(JSON.parse(audit[0]!['expected_json'] as string)).toMatchObject({
        proofFile: file,
        proofFileSha256: createHash('sha256').update(bad).digest('hex'),
        proofId: claimed,
        formUuid: FORM,
      });
      expect(JSON.parse(audit[0]!['observed_json'] as string)).toMatchObject({
        refusal: 'PROOF_DIGEST',
        entriesRefused: ABSENT.length,
      });
    }
    expect([await projectionSum(), await fcSum(), await auditCount()]).toEqual([s, f, audits + spots.length]);
  });

  test('a refused proof in a dry run writes nothing to any database, not even an audit row', async () => {
    const file = join(dir, 'dry-refused.json');
    reseal(proof5, file, (p) => void (p['note'] = 'x'));
    const [s, f] = [await shSum(), await fcSum()];
    const r = await cli(['retire-absent', '--proof', file, '--run-id', 'dry-refused']);
    expect(r.code).toBe(4);
    expect(resultsOf(r.stdout).map((x) => [x['result'], x['reason'], x['dryRun']])).toEqual(
      ABSENT.map(() => ['REFUSED', 'PROOF_INVALID', true]),
    );
    expect(summaryOf(r.stdout)).toMatchObject({
      dryRun: true,
      proofRefused: 'PROOF_INVALID',
      wouldRetire: 0,
      refused: 6,
    });
    expect([await shSum(), await fcSum()]).toEqual([s, f]);
    expect(await auditOfRun('dry-refused')).toEqual([]);
  });

  test('a refused proof whose audit row cannot be written (SH unreachable) → exit 3 naming the refusal, nothing retired', async () => {
    const file = join(dir, 'refused-no-sh.json');
    reseal(proof5, file, (p) => void (p['note'] = 'x'));
    const r = await cli(
      ['retire-absent', '--proof', file, '--execute'],
      dbs.env({ FCCTL_SH_DATABASE_URL: 'mysql://fcctl:pw@127.0.0.1:9/nope' }),
    );
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(
      /^fcctl: proof refused \(PROOF_INVALID\), nothing retired, but the refusal could not be written to fc_reconcile_audit: .*\n$/,
    );
    const ev = jsonl(join(dir, 'refused-no-sh.evidence.jsonl'));
    expect(ev.map((l) => l['type'])).toEqual(['run', 'refused-proof', ...ABSENT.map(() => 'decision'), 'end']);
    expect(ev.at(-1)).toMatchObject({
      exitCode: null,
      error: expect.stringMatching(/could not be written to fc_reconcile_audit/),
    });
  });

  test('refuses a proof as a whole (exit 4, nothing retired, one audit row each): expired, from the future, members missing or added, digest missing, another FC database; each entry refused for what was checked', async () => {
    const [s, f] = [await projectionSum(), await fcSum()];
    const day = 86400_000;
    const cases: Array<[string, (p: Record<string, unknown>) => void, boolean, RegExp, string[]?]> = [
      [
        'expired',
        (p) => void (p['createdAt'] = new Date(Date.now() - day - 60_000).toISOString()),
        true,
        /\(PROOF_EXPIRED\), nothing retired: the proof is 1d1m(\d+s)? old .*over --max-proof-age 1d/,
      ],
      [
        'expired under a short --max-proof-age',
        (p) => void (p['createdAt'] = new Date(Date.now() - 5000).toISOString()),
        true,
        /\(PROOF_EXPIRED\).*over --max-proof-age 1s/,
        ['--max-proof-age', '1s'],
      ],
      [
        'made in the future',
        (p) => void (p['createdAt'] = new Date(Date.now() + day).toISOString()),
        true,
        /\(PROOF_EXPIRED\).*in the future/,
      ],
      [
        'a member missing (not resealed)',
        (p) => void delete p['taskStart'],
        false,
        /\(PROOF_DIGEST\).*changed after prove wrote it/,
      ],
      ['the digest missing', (p) => void delete p['digest'], false, /\(PROOF_DIGEST\).*has no digest member/],
      [
        'an extra member, resealed',
        (p) => void (p['intent'] = { retire: 'everything' }),
        true,
        /\(PROOF_INVALID\).*unexpected member "intent"/,
      ],
      [
        'an entry created after the task start, resealed',
        (p) => void ((p['entries'] as Array<Record<string, unknown>>)[0]!['localCreateTime'] = '2099-01-01 00:00:00'),
        true,
        /\(PROOF_INVALID\).*entries\[0\]\.localCreateTime is after the task start/,
      ],
    ];
    for (const [i, [name, edit, resealed, message, extra]] of cases.entries()) {
      const file = join(dir, `whole-${name.replaceAll(' ', '-')}.json`);
      if (resealed) reseal(proof5, file, edit);
      else {
        const p = JSON.parse(readFileSync(proof5, 'utf8')) as Record<string, unknown>;
        edit(p);
        writeFileSync(file, JSON.stringify(p, null, 2));
      }
      const r = await cli(['retire-absent', '--proof', file, '--execute', '--run-id', `whole-${i}`, ...(extra ?? [])]);
      expect(r.code, name).toBe(4);
      expect(r.stderr, name).toMatch(message);
      expect(r.stderr.split('\n')).toHaveLength(2);
      const code = /\((PROOF_\w+)\)/.exec(r.stderr)![1]!;
      // each entry is refused for what was checked: a digest that matched is never called PROOF_DIGEST
      expect(
        resultsOf(r.stdout).map((x) => [x['result'], x['reason']]),
        name,
      ).toEqual(ABSENT.map(() => ['REFUSED', code]));
      expect(
        resultsOf(r.stdout).every(
          (x) =>
            (x['detail'] as string).startsWith(`the proof is refused (${code}): `) &&
            (x['detail'] as string).endsWith('; this entry was not checked'),
        ),
        name,
      ).toBe(true);
      expect(summaryOf(r.stdout), name).toMatchObject({
        exitCode: 4,
        proofRefused: code,
        retired: 0,
        refused: ABSENT.length,
        byReason: { [code]: ABSENT.length },
      });
      const audit = await auditOfRun(`whole-${i}`);
      expect(audit, name).toEqual([
        expect.objectContaining({
          action: 'RETIRE_ABSENT',
          outcome: 'REFUSED',
          reason: expect.stringMatching(new RegExp(`^${code}: `)),
          proof_id: 'rp-school-5',
          host: hostname(),
          sch_id: '5',
          answer_uuid: null,
        }),
      ]);
      expect(JSON.parse(audit[0]!['observed_json'] as string), name).toMatchObject({
        refusal: code,
        entriesRefused: ABSENT.length,
      });
    }
    const other = await cli(
      ['retire-absent', '--proof', proof5, '--execute', '--run-id', 'whole-fc-db'],
      dbs.env({ FCCTL_FC_DATABASE_URL: 'mysql://u:p@elsewhere.invalid:3306/fc' }),
    );
    expect(other.code).toBe(4);
    expect(other.stderr).toMatch(
      /\(FC_DATABASE\).*made against the FC database 127\.0\.0\.1:\d+\/\S+, the configured one is elsewhere\.invalid:3306\/fc\n$/,
    );
    expect(resultsOf(other.stdout).map((x) => [x['result'], x['reason']])).toEqual(
      ABSENT.map(() => ['REFUSED', 'FC_DATABASE']),
    );
    const audit = await auditOfRun('whole-fc-db');
    expect(audit).toEqual([
      expect.objectContaining({
        outcome: 'REFUSED',
        reason: expect.stringMatching(/^FC_DATABASE: the proof was made against the FC database 127\.0\.0\.1:/),
        proof_id: 'rp-school-5',
        sch_id: '5',
        answer_uuid: null,
      }),
    ]);
    expect(JSON.parse(audit[0]!['observed_json'] as string)).toMatchObject({
      refusal: 'FC_DATABASE',
      configuredFcDatabase: 'elsewhere.invalid:3306/fc',
    });
    expect(audit[0]!['observed_json']).not.toMatch(/u:p@|mysql:/);
    expect([await projectionSum(), await fcSum()]).toEqual([s, f]);
  });

  test('bad input → exit 2 with one line, nothing written anywhere (no evidence file either)', async () => {
    const [s, f] = [await shSum(), await fcSum()];
    const text = readFileSync(proof5, 'utf8');
    const files: Record<string, string | Buffer> = {
      truncated: text.slice(0, text.length - 10),
      'not-utf8': Buffer.concat([
        Buffer.from(text.slice(0, 40)),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(text.slice(40)),
      ]),
      'duplicate-member': text.replace('"schId": "5",', '"schId": "5", "schId": "6",'),
      'not-an-object': '[1, 2]\n',
      'no-format': '{"proofId": "x"}\n',
      csv: 'category,answerUuid\nABSENT_AT_FC,x\n',
    };
    const v2 = join(dir, 'bad-v2.json');
    reseal(proof5, v2, (p) => void (p['format'] = 'fcctl.retire-proof.v2'));
    const huge = join(dir, 'bad-huge.json');
    writeFileSync(huge, '');
    truncateSync(huge, MAX_PROOF_BYTES + 1);
    const expectations: Array<[string, string[], RegExp]> = [
      ...Object.entries(files).map(([name, body]): [string, string[], RegExp] => {
        const file = join(dir, `bad-${name}.json`);
        writeFileSync(file, body);
        return [
          file,
          [],
          /^fcctl: proof .* (is not a strict JSON document \((UNEXPECTED_END|DUPLICATE_MEMBER|[A-Z_]+)|is not UTF-8 text|is not a JSON object|has no "format": "fcctl\.retire-proof\.v1" member)/,
        ];
      }),
      [v2, [], /is a "fcctl\.retire-proof\.v2" proof; this fcctl reads fcctl\.retire-proof\.v1 only/],
      [huge, [], /is \d+ bytes, over the 67108864-byte limit of a retire proof/],
      [join(dir, 'missing.json'), [], /cannot read proof .*missing\.json: ENOENT/],
      [proof5, ['--max-proof-age', '0'], /option '--max-proof-age <duration>' argument '0' is invalid/],
      [proof5, ['--max-proof-age', '24 hours'], /argument '24 hours' is invalid/],
      [proof5, ['--run-id', 'x'.repeat(65)], /option '--run-id <id>' argument .* is invalid/],
    ];
    const size = (f: string) => (existsSync(f) ? readFileSync(f).length : -1);
    for (const [file, extra, message] of expectations) {
      const evidence = file.replace(/\.json$/, '.evidence.jsonl');
      const evidenceBefore = size(evidence);
      const r = await cli(['retire-absent', '--proof', file, '--execute', ...extra]);
      expect(r.code, file).toBe(2);
      expect(r.stderr, file).toMatch(message);
      expect(r.stderr.split('\n'), file).toHaveLength(2);
      expect(r.stdout, file).toBe('');
      expect(size(evidence), file).toBe(evidenceBefore);
    }
    const none = await cli(['retire-absent', '--execute']);
    expect([none.code, none.stderr]).toEqual([2, 'fcctl: give --proof FILE (made by `fcctl retire-absent prove`)\n']);
    expect([await shSum(), await fcSum()]).toEqual([s, f]);
  });

  test('execute: RETIRED where every rule holds; an answer back at FC since prove → PRESENT_AT_FC; changed, missing, null or late rows refused; audit and evidence for every decision', async () => {
    // Between prove and retire: U2 comes back at FC, U3's hash changes, U4's createTime is lost,
    // U5 is re-created after the task start, U6's row is gone.
    await insertAnswers(dbs.admin, dbs.fcName, [{ answerUuid: U(5, 2), formUuid: FORM, schId: 5, revision: 3 }]);
    await sh(`UPDATE $SH.fc_answer_projection SET content_hash = ? WHERE answer_uuid = ?`, ['c'.repeat(64), U(5, 3)]);
    await sh(`UPDATE $SH.fc_answer_projection SET create_time = NULL WHERE answer_uuid = ?`, [U(5, 4)]);
    await sh(`UPDATE $SH.fc_answer_projection SET create_time = '2099-01-01 00:00:00' WHERE answer_uuid = ?`, [
      U(5, 5),
    ]);
    await sh(`DELETE FROM $SH.fc_answer_projection WHERE answer_uuid = ?`, [U(5, 6)]);
    const before = await sh(
      `SELECT answer_uuid, answer_revision, content_hash, is_deleted, projection_version, snapshot_json FROM $SH.fc_answer_projection WHERE sch_id = 5 ORDER BY answer_uuid`,
    );

    const r = await cli(['retire-absent', '--proof', proof5, '--execute', '--run-id', 'run-5a']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    const by = Object.fromEntries(resultsOf(r.stdout).map((x) => [x['answerUuid'], [x['result'], x['reason']]]));
    expect(by).toEqual({
      [U(5, 1)]: ['RETIRED', null],
      [U(5, 2)]: ['REFUSED', 'PRESENT_AT_FC'],
      [U(5, 3)]: ['REFUSED', 'LOCAL_CHANGED'],
      [U(5, 4)]: ['REFUSED', 'CREATE_TIME_NULL'],
      [U(5, 5)]: ['REFUSED', 'CREATED_AFTER_TASK_START'],
      [U(5, 6)]: ['REFUSED', 'LOCAL_MISSING'],
    });
    expect(summaryOf(r.stdout)).toMatchObject({
      exitCode: 1,
      dryRun: false,
      runId: 'run-5a',
      retired: 1,
      refused: 5,
      byReason: {
        PRESENT_AT_FC: 1,
        LOCAL_CHANGED: 1,
        CREATE_TIME_NULL: 1,
        CREATED_AFTER_TASK_START: 1,
        LOCAL_MISSING: 1,
        PROOF_DIGEST: 0,
        PROOF_EXPIRED: 0,
      },
    });

    // only U1 is retired; no row deleted, no revision, hash or snapshot changed
    const after = await sh(
      `SELECT answer_uuid, answer_revision, content_hash, is_deleted, projection_version, snapshot_json, retired_at, retire_proof_id FROM $SH.fc_answer_projection WHERE sch_id = 5 ORDER BY answer_uuid`,
    );
    expect(after.map(({ retired_at: _r, retire_proof_id: _p, projection_version: _v, ...rest }) => rest)).toEqual(
      before.map(({ projection_version: _v, ...rest }) => rest),
    );
    for (const row of after) {
      const was = before.find((b) => b['answer_uuid'] === row['answer_uuid'])!;
      if (row['answer_uuid'] === U(5, 1)) {
        expect(row['retired_at']).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
        expect(row['retire_proof_id']).toBe('rp-school-5');
        expect(Number(row['projection_version'])).toBe(Number(was['projection_version']) + 1);
      } else {
        expect([row['retired_at'], row['retire_proof_id'], row['projection_version']]).toEqual([
          null,
          null,
          was['projection_version'],
        ]);
      }
    }
    const audit = await sh(
      `SELECT action, outcome, reason, proof_id, run_id, sch_id, answer_uuid, expected_json, observed_json FROM $SH.fc_reconcile_audit WHERE run_id = 'run-5a' ORDER BY answer_uuid`,
    );
    expect(audit).toHaveLength(6);
    expect(new Set(audit.map((a) => a['action']))).toEqual(new Set(['RETIRE_ABSENT']));
    const a1 = audit.find((a) => a['answer_uuid'] === U(5, 1))!;
    expect(a1).toMatchObject({ outcome: 'RETIRED', proof_id: 'rp-school-5', sch_id: '5' });
    expect(JSON.parse(a1['expected_json'] as string)).toMatchObject({
      revision: '1',
      isDeleted: false,
      createTime: '2026-10-01 08:00:00',
    });
    expect(JSON.parse(a1['observed_json'] as string)).toMatchObject({
      fc: { present: false },
      local: { revision: '1', retiredAt: null },
      retiredAt: expect.any(String),
    });
    expect(audit.find((a) => a['answer_uuid'] === U(5, 2))).toMatchObject({
      outcome: 'REFUSED',
      reason: expect.stringMatching(/^PRESENT_AT_FC: FC has answer/),
    });
    const ev = jsonl(join(dir, 'proof5.evidence.jsonl')).filter((l) => l['runId'] === 'run-5a');
    expect(ev.map((l) => l['type'])).toEqual(['run', ...ABSENT.map(() => 'decision'), 'end']);
    expect(ev.find((l) => l['answerUuid'] === U(5, 1))).toMatchObject({
      result: 'RETIRED',
      dryRun: false,
      retiredAt: after.find((a) => a['answer_uuid'] === U(5, 1))!['retired_at'],
    });
  });

  test('re-running the same proof: the retirement is never written twice (ALREADY_RETIRED), refusals stand; each run appends its decisions to the audit', async () => {
    const projection = await checksumTables(dbs.admin, dbs.shName, ['fc_answer_projection']);
    const r = await cli(['retire-absent', '--proof', proof5, '--execute', '--run-id', 'run-5b']);
    expect(r.code).toBe(1);
    const by = Object.fromEntries(resultsOf(r.stdout).map((x) => [x['answerUuid'], x['result']]));
    // ALREADY_RETIRED: nothing changed, so counted in the summary and printed as no result line
    expect(by[U(5, 1)]).toBeUndefined();
    expect(summaryOf(r.stdout)).toMatchObject({ alreadyRetired: 1 });
    expect(await checksumTables(dbs.admin, dbs.shName, ['fc_answer_projection'])).toBe(projection);
    const counts = await sh(
      `SELECT run_id, outcome, COUNT(*) AS n FROM $SH.fc_reconcile_audit GROUP BY run_id, outcome ORDER BY run_id, outcome`,
    );
    expect(counts.filter((c) => c['outcome'] !== 'REFUSED')).toEqual([
      { run_id: 'run-5a', outcome: 'RETIRED', n: '1' },
      { run_id: 'run-5b', outcome: 'ALREADY_RETIRED', n: '1' },
    ]);
  });

  test('a clean proof: every entry RETIRED (exit 0); the same proof again: every entry ALREADY_RETIRED (exit 0), nothing written twice', async () => {
    const proof = join(dir, 'proof6.json');
    expect((await cli(proveArgs(run6, proof))).code).toBe(0);
    const first = await cli(['retire-absent', '--proof', proof, '--execute']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(resultsOf(first.stdout).map((x) => x['result'])).toEqual(ABSENT.map(() => 'RETIRED'));
    const projection = await checksumTables(dbs.admin, dbs.shName, ['fc_answer_projection']);
    const again = await cli(['retire-absent', '--proof', proof, '--execute']);
    expect(again.code).toBe(0);
    // nothing changed: counted in the summary, no result line each (docs/output.md); the evidence has them all
    expect(resultsOf(again.stdout)).toEqual([]);
    expect(summaryOf(again.stdout)).toMatchObject({ exitCode: 0, retired: 0, alreadyRetired: 6, refused: 0 });
    expect(await checksumTables(dbs.admin, dbs.shName, ['fc_answer_projection'])).toBe(projection);
    const [{ n }] = (await sh(
      `SELECT COUNT(*) AS n FROM $SH.fc_reconcile_audit WHERE sch_id = 6 AND outcome = 'RETIRED'`,
    )) as [{ n: string }];
    expect(n).toBe('6');
    const retired = await sh(
      `SELECT COUNT(*) AS n FROM $SH.fc_answer_projection WHERE sch_id = 6 AND retired_at IS NOT NULL AND retire_proof_id LIKE 'rp-%'`,
    );
    expect(retired[0]!['n']).toBe('6');
    // and the next reconcile sees them as RETIRED, not as candidates
    const next = await cli([
      'reconcile',
      'run',
      '--school',
      '6',
      '--form',
      FORM,
      '--out-dir',
      join(dir, 'run-6-after'),
    ]);
    expect(summaryOf(next.stdout)).toMatchObject({ retireCandidates: 0, counts: { RETIRED: 6, ABSENT_AT_FC: 0 } });
  });

  test("rows retired by another proof are REFUSED RETIRED_BY_OTHER_PROOF (exit 1), never reported as this proof's success; nothing written but the audit", async () => {
    const mine = JSON.parse(readFileSync(join(dir, 'proof6.json'), 'utf8')) as { proofId: string };
    const other = join(dir, 'proof6-other.json');
    reseal(join(dir, 'proof6.json'), other, (p) => void (p['proofId'] = 'rp-other'));
    const projection = await projectionSum();
    const dry = await cli(['retire-absent', '--proof', other, '--run-id', 'other-dry']);
    expect(dry.code).toBe(1);
    expect(resultsOf(dry.stdout).map((x) => [x['result'], x['reason']])).toEqual(
      ABSENT.map(() => ['REFUSED', 'RETIRED_BY_OTHER_PROOF']),
    );
    expect(await auditOfRun('other-dry')).toEqual([]);
    const r = await cli(['retire-absent', '--proof', other, '--execute', '--run-id', 'other-exec']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    const results = resultsOf(r.stdout);
    expect(results.map((x) => [x['result'], x['reason']])).toEqual(
      ABSENT.map(() => ['REFUSED', 'RETIRED_BY_OTHER_PROOF']),
    );
    expect(results[0]!['detail']).toMatch(
      new RegExp(
        `^retired at \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2} by proof ${mine.proofId}, not by this proof \\(rp-other\\): a person decides; nothing written$`,
      ),
    );
    expect(summaryOf(r.stdout)).toMatchObject({
      exitCode: 1,
      retired: 0,
      alreadyRetired: 0,
      refused: ABSENT.length,
      byReason: { RETIRED_BY_OTHER_PROOF: ABSENT.length },
    });
    expect(await projectionSum()).toBe(projection);
    const audit = await auditOfRun('other-exec');
    expect(audit.map((a) => [a['outcome'], a['proof_id'], (a['reason'] as string).split(':')[0]])).toEqual(
      ABSENT.map(() => ['REFUSED', 'rp-other', 'RETIRED_BY_OTHER_PROOF']),
    );
    // the proof that did retire them still re-runs clean
    await expectRerunsClean(join(dir, 'proof6.json'));
  });

  test('a proof is its id AND its digest: another proof with the same id (another digest) is refused as a whole, PROOF_ID_REUSED (exit 4, one audit row), never ALREADY_RETIRED; the proof that retired still re-runs clean', async () => {
    const mine = proof6();
    const twin = join(dir, 'proof6-twin.json');
    // same candidates, same id, made a moment later: another digest
    reseal(join(dir, 'proof6.json'), twin, (p) => void (p['createdAt'] = new Date().toISOString()));
    const t = JSON.parse(readFileSync(twin, 'utf8')) as { proofId: string; digest: string };
    expect(t.proofId).toBe(mine.proofId);
    expect(t.digest).not.toBe(mine.digest);
    const detail = `proof id ${mine.proofId} was already used by another proof (with digest ${mine.digest.slice(0, 12)}…; this proof's ${t.digest.slice(0, 12)}…): a proof is its id and its digest — make a new proof with another --proof-id`;
    const projection = await projectionSum();
    const audits = await auditCount();
    const dry = await cli(['retire-absent', '--proof', twin, '--run-id', 'twin-dry']);
    expect(dry.code).toBe(4);
    expect(resultsOf(dry.stdout).map((x) => [x['result'], x['reason']])).toEqual(
      ABSENT.map(() => ['REFUSED', 'PROOF_ID_REUSED']),
    );
    expect(await auditCount()).toBe(audits);
    const r = await cli(['retire-absent', '--proof', twin, '--execute', '--run-id', 'twin-exec']);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(detail);
    const results = resultsOf(r.stdout);
    expect(results.map((x) => [x['result'], x['reason']])).toEqual(ABSENT.map(() => ['REFUSED', 'PROOF_ID_REUSED']));
    expect(results[0]!['detail']).toBe(`the proof is refused (PROOF_ID_REUSED): ${detail}; this entry was not checked`);
    expect(await projectionSum()).toBe(projection);
    const audit = await auditOfRun('twin-exec');
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      outcome: 'REFUSED',
      proof_id: mine.proofId,
      answer_uuid: null,
      reason: `PROOF_ID_REUSED: ${detail}`,
    });
    expect(JSON.parse(audit[0]!['expected_json'] as string)).toMatchObject({
      proofId: mine.proofId,
      proofDigest: t.digest,
    });
    const ev = jsonl(join(dir, 'proof6-twin.evidence.jsonl'));
    expect(ev.filter((l) => l['type'] === 'refused-proof').map((l) => l['reason'])).toEqual([
      'PROOF_ID_REUSED',
      'PROOF_ID_REUSED',
    ]);
    // the RETIRED audit rows carry the digest of the proof that retired; the refusal row takes the id from no one
    const retiredRows = await sh(
      `SELECT expected_json FROM $SH.fc_reconcile_audit WHERE sch_id = 6 AND outcome = 'RETIRED' AND proof_id = ?`,
      [mine.proofId],
    );
    expect(
      retiredRows.map((a) => (JSON.parse(a['expected_json'] as string) as { proofDigest: string }).proofDigest),
    ).toEqual(ABSENT.map(() => mine.digest));
    await expectRerunsClean(join(dir, 'proof6.json'));
  });

  test('prove refuses an id another proof already used (exit 4, one line, no file); a chosen id needs the SH database to be checked', async () => {
    const mine = proof6();
    const out = join(dir, 'proof6-reused.json');
    const r = await cli(proveArgs(run6, out, ['--proof-id', mine.proofId]));
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(
      new RegExp(
        `^fcctl: proof id ${mine.proofId} was already used by another proof \\(with digest ${mine.digest.slice(0, 12)}…; this proof's [0-9a-f]{12}…\\): a proof is its id and its digest — make a new proof with another --proof-id; no proof written\n$`,
      ),
    );
    expect(existsSync(out)).toBe(false);
    // a chosen id no proof used is accepted
    const free = join(dir, 'proof6-other-id.json');
    expect((await cli(proveArgs(run6, free, ['--proof-id', 'rp-never-used']))).code).toBe(0);
    const noSh = { ...env, FCCTL_SH_DATABASE_URL: undefined };
    const r2 = await cli(proveArgs(run6, join(dir, 'proof6-nosh.json'), ['--proof-id', 'rp-never-used-2']), noSh);
    expect(r2.code).toBe(2);
    expect(r2.stderr.split('\n')).toHaveLength(2);
    expect(existsSync(join(dir, 'proof6-nosh.json'))).toBe(false);
    // the default id (a new UUID) needs no SH database
    expect((await cli(proveArgs(run6, join(dir, 'proof6-default-id.json')), noSh)).code).toBe(0);
  });

  test('two proofs with one id run at once: both pass the id check before either retired; under the row lock the second sees the RETIRED audit row of the other digest → REFUSED RETIRED_BY_OTHER_PROOF, never ALREADY_RETIRED', async () => {
    await arrangeSchool(7);
    const run7 = await reconcile(7);
    const first = join(dir, 'proof7-a.json');
    expect((await cli(proveArgs(run7, first, ['--proof-id', 'rp-race']))).code).toBe(0);
    const second = join(dir, 'proof7-b.json');
    reseal(first, second, (p) => void (p['createdAt'] = new Date().toISOString()));
    const a = JSON.parse(readFileSync(first, 'utf8')) as { digest: string; entries: Array<{ answerUuid: string }> };
    // hold the rows so both runs wait on them, past their whole-proof checks
    const lock = await mysql.createConnection({ uri: testMysqlUrl() });
    try {
      await lock.query('START TRANSACTION');
      await lock.query(
        `SELECT id FROM \`${dbs.shName}\`.fc_answer_projection WHERE sch_id = 7 AND answer_uuid IN (?) FOR UPDATE`,
        [a.entries.map((e) => e.answerUuid)],
      );
      const runs = [
        cli(['retire-absent', '--proof', first, '--execute', '--run-id', 'race-a']),
        cli(['retire-absent', '--proof', second, '--execute', '--run-id', 'race-b']),
      ];
      for (let i = 0; ; i++) {
        const [[w]] = (await lock.query(
          `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE '%fc_answer_projection%FOR UPDATE'`,
        )) as unknown as [[{ n: number | string }]];
        if (Number(w.n) >= 2) break;
        if (i > 200) throw new Error('the two runs never both waited on the rows');
        await new Promise((res) => setTimeout(res, 50));
      }
      await lock.query('ROLLBACK');
      const [ra, rb] = await Promise.all(runs);
      const results = [ra!, rb!].map((r) => ({
        code: r.code,
        by: resultsOf(r.stdout).map((x) => [x['result'], x['reason']]),
      }));
      // whichever took each row first retired it; the other is refused for it, never ALREADY_RETIRED
      for (const n of ABSENT.keys()) {
        const pair = results.map((r) => r.by[n]!);
        expect(pair.map((x) => x[0]).sort(), `entry ${n}`).toEqual(['REFUSED', 'RETIRED']);
        expect(pair.find((x) => x[0] === 'REFUSED')![1]).toBe('RETIRED_BY_OTHER_PROOF');
      }
      for (const r of results) expect(r.code).toBe(r.by.some((x) => x[0] === 'REFUSED') ? 1 : 0);
      const refusedRows = await sh(
        `SELECT reason FROM $SH.fc_reconcile_audit WHERE run_id IN ('race-a', 'race-b') AND outcome = 'REFUSED'`,
      );
      expect(refusedRows).toHaveLength(ABSENT.length);
      for (const row of refusedRows)
        expect(row['reason']).toMatch(
          /^RETIRED_BY_OTHER_PROOF: retired at .* by another proof with the same id rp-race \(digest [0-9a-f]{12}…, this proof's [0-9a-f]{12}…\)/,
        );
    } finally {
      await lock.end();
    }
  });

  test("a row marked retired under this proof's id with no RETIRED audit row of this proof (set by hand) is REFUSED RETIRED_BY_OTHER_PROOF, not ALREADY_RETIRED", async () => {
    const mine = proof6();
    // the retirement of U(6,1) re-made by hand: retired_at moved, so no RETIRED audit row records it
    await sh(
      `UPDATE $SH.fc_answer_projection SET retired_at = '2026-11-29 00:00:00' WHERE answer_uuid = ? AND sch_id = 6`,
      [U(6, 1)],
    );
    try {
      const r = await cli(['retire-absent', '--proof', join(dir, 'proof6.json'), '--run-id', 'hand-dry']);
      expect(r.code).toBe(1);
      const by = Object.fromEntries(
        resultsOf(r.stdout).map((x) => [x['answerUuid'], [x['result'], x['reason'], x['detail']]]),
      );
      expect(by[U(6, 1)]).toEqual([
        'REFUSED',
        'RETIRED_BY_OTHER_PROOF',
        `retired at 2026-11-29 00:00:00 under this proof's id ${mine.proofId}, but no RETIRED audit row of this retirement records this proof's digest (${mine.digest.slice(0, 12)}…): a person decides; nothing written`,
      ]);
      // the others are ALREADY_RETIRED: counted, not printed
      expect(by[U(6, 2)]).toBeUndefined();
      expect(summaryOf(r.stdout)).toMatchObject({ alreadyRetired: ABSENT.length - 1, refused: 1 });
    } finally {
      const [{ retired_at }] = (await sh(
        `SELECT CAST(observed_json AS CHAR) AS retired_at FROM $SH.fc_reconcile_audit WHERE answer_uuid = ? AND sch_id = 6 AND outcome = 'RETIRED'`,
        [U(6, 1)],
      )) as [{ retired_at: string }];
      await sh(`UPDATE $SH.fc_answer_projection SET retired_at = ? WHERE answer_uuid = ? AND sch_id = 6`, [
        (JSON.parse(retired_at) as { retiredAt: string }).retiredAt,
        U(6, 1),
      ]);
    }
    const again = await cli(['retire-absent', '--proof', join(dir, 'proof6.json')]);
    expect(again.code).toBe(0);
  });

  test('prove leaves out a candidate FC has again (exit 1, listed in excluded), and the proof holds the rest', async () => {
    const out = join(dir, 'proof5-again.json');
    const r = await cli(proveArgs(run5, out));
    expect(r.code).toBe(1);
    const excluded = jsonLines(r.stdout).filter((l) => l['type'] === 'excluded');
    expect(excluded).toEqual([
      expect.objectContaining({ answerUuid: U(5, 2), reason: 'PRESENT_AT_FC', detail: 'FC has it now (revision 3)' }),
    ]);
    const p = JSON.parse(readFileSync(out, 'utf8')) as { entries: Array<{ answerUuid: string }>; excluded: unknown[] };
    expect(p.entries.map((e) => e.answerUuid)).not.toContain(U(5, 2));
    expect(p.entries).toHaveLength(5);
    expect(p.excluded).toHaveLength(1);
    expect(summaryOf(r.stdout)).toMatchObject({
      exitCode: 1,
      entries: 5,
      excluded: 1,
      byReason: { PRESENT_AT_FC: 1, CREATE_TIME_NULL: 0, CREATED_AFTER_TASK_START: 0 },
    });
  });
});
