import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { beforeAll, describe, expect } from 'vitest';
import { canonicalize } from '../../src/lib/canon/index.js';
import { buildEnvelope } from '../../src/lib/deliveries/envelope.js';
import type { DeliveryRow } from '../../src/lib/deliveries/types.js';
import { checksumTables, FC_TABLES } from '../helpers/checksum.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { testMysqlUrl, type TestDatabases } from '../helpers/db.js';
import { insertGrant } from '../helpers/deliveries.js';
import {
  auditRows,
  hashOf,
  insertFcAnswer,
  insertProjection,
  pick,
  projectionRow,
  UNTOUCHED_COLUMNS,
} from '../helpers/projection.js';
import { waitFor } from '../helpers/wait.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'proj', init: 'all' });

const KEY = '100100';
const FORM = 'f1000000-0000-4000-8000-000000000001';
const FORM_REVOKED = 'f1000000-0000-4000-8000-000000000002';
const FORM_NO_GRANT = 'f1000000-0000-4000-8000-000000000003';
const OTHER_FORM = 'f1000000-0000-4000-8000-00000000000f';
const SH_TABLES = ['fc_answer_projection', 'fc_reconcile_audit'];

let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let tmp: string;
let evidence: string;

test.beforeAll(async ({ dbs: services, tmp: dir }) => {
  dbs = services;
  env = dbs.env();
  tmp = dir;
  await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: KEY, grantVersion: 2, push: 0 });
  await insertGrant(dbs.admin, dbs.fcName, {
    formUuid: FORM_REVOKED,
    schoolId: 5,
    consumerKey: KEY,
    grantVersion: 2,
    revoked: 1,
  });
  await insertGrant(dbs.admin, dbs.fcName, {
    formUuid: FORM_NO_GRANT,
    schoolId: 5,
    consumerKey: 'someone-else',
    grantVersion: 1,
  });
  evidence = join(tmp, 'evidence.jsonl');
});

const repair = (args: readonly string[], options: { env?: Record<string, string | undefined> } = {}) =>
  runCli(
    [
      '--json',
      'projection',
      'repair-authoritative',
      '--consumer',
      KEY,
      '--proof-id',
      'INC-7',
      '--evidence',
      evidence,
      ...args,
    ],
    { env: options.env ?? env },
  );
const resultOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'result')!;
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const evidenceOf = (answerUuid: string) =>
  readFileSync(evidence, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['answerUuid'] === answerUuid);
/** A dry run's word for an executed result or code: never one that reads as done. */
const DRY: Record<string, string> = {
  APPLIED: 'WOULD_APPLY',
  INSERTED: 'WOULD_INSERT',
  STALE_REPAIRED: 'WOULD_REPAIR_STALE',
  HASH_CONFLICT_REPAIRED: 'WOULD_REPAIR_HASH_CONFLICT',
};
const dryOf = (label: string) => DRY[label] ?? label;
/** Any label or count of an executed write, as a JSON string or member name. */
const EXECUTED_WORDS =
  /"(APPLIED|INSERTED|STALE_REPAIRED|HASH_CONFLICT_REPAIRED|inserted|updated)"|: inserted as|nothing written/;
const checksums = async () =>
  `${await checksumTables(dbs.admin, dbs.shName, SH_TABLES)} ${await checksumTables(
    dbs.admin,
    dbs.fcName,
    FC_TABLES.filter((t) => t !== 'fcctl_replay_operation'),
  )}`;

type Expect = 'missing' | 'local' | { revision: number; hash: string; isDeleted: 0 | 1 };
type After = 'inserted' | 'repaired' | 'unchanged' | 'absent';
interface Case {
  name: string;
  fc: { formUuid?: string; revision?: number; isDeleted?: number; schId?: number } | null;
  local: {
    revision: number;
    sameHash?: boolean;
    isDeleted?: number;
    conflictFlag?: number;
    retired?: boolean;
    formUuid?: string;
  } | null;
  expect: Expect;
  maxRereads?: number;
  result: string;
  code: string;
  after: After;
  rereads?: number;
}

const CASES: Case[] = [
  { name: 'missing', fc: {}, local: null, expect: 'missing', result: 'APPLIED', code: 'INSERTED', after: 'inserted' },
  {
    name: 'missing, FC tombstoned',
    fc: { revision: 4, isDeleted: 1 },
    local: null,
    expect: 'missing',
    result: 'APPLIED',
    code: 'INSERTED',
    after: 'inserted',
  },
  {
    name: 'equal',
    fc: {},
    local: { revision: 3, sameHash: true },
    expect: 'local',
    result: 'APPLIED',
    code: 'ALREADY_CURRENT',
    after: 'unchanged',
  },
  {
    name: 'older',
    fc: {},
    local: { revision: 2 },
    expect: 'local',
    result: 'APPLIED',
    code: 'STALE_REPAIRED',
    after: 'repaired',
  },
  {
    name: 'same revision, other hash (conflict flagged)',
    fc: {},
    local: { revision: 3, conflictFlag: 1 },
    expect: 'local',
    result: 'APPLIED',
    code: 'HASH_CONFLICT_REPAIRED',
    after: 'repaired',
  },
  {
    name: 'deleted locally at the same revision and hash',
    fc: {},
    local: { revision: 3, sameHash: true, isDeleted: 1 },
    expect: 'local',
    result: 'APPLIED',
    code: 'HASH_CONFLICT_REPAIRED',
    after: 'repaired',
  },
  {
    name: 'older, FC tombstoned',
    fc: { revision: 4, isDeleted: 1 },
    local: { revision: 3 },
    expect: 'local',
    result: 'APPLIED',
    code: 'STALE_REPAIRED',
    after: 'repaired',
  },
  {
    name: 'newer',
    fc: {},
    local: { revision: 4 },
    expect: 'local',
    result: 'LOCAL_AHEAD',
    code: 'LOCAL_REVISION_AHEAD',
    after: 'unchanged',
  },
  {
    name: 'newer and deleted',
    fc: {},
    local: { revision: 5, isDeleted: 1 },
    expect: 'local',
    result: 'LOCAL_AHEAD',
    code: 'LOCAL_REVISION_AHEAD',
    after: 'unchanged',
  },
  {
    name: 'retired',
    fc: {},
    local: { revision: 2, retired: true },
    expect: 'local',
    result: 'DEFERRED',
    code: 'LOCAL_RETIRED',
    after: 'unchanged',
  },
  {
    name: 'changed since read (no re-read)',
    fc: {},
    local: { revision: 2 },
    expect: { revision: 1, hash: hashOf('old'), isDeleted: 0 },
    maxRereads: 0,
    result: 'LOCAL_CHANGED',
    code: 'EXPECTED_MISMATCH',
    after: 'unchanged',
  },
  {
    name: 'changed since read, re-read',
    fc: {},
    local: { revision: 2 },
    expect: { revision: 1, hash: hashOf('old'), isDeleted: 0 },
    result: 'APPLIED',
    code: 'STALE_REPAIRED',
    after: 'repaired',
    rereads: 1,
  },
  {
    name: 'observed missing, now present and older (re-read)',
    fc: {},
    local: { revision: 2 },
    expect: 'missing',
    result: 'APPLIED',
    code: 'STALE_REPAIRED',
    after: 'repaired',
    rereads: 1,
  },
  {
    name: 'grant revoked',
    fc: { formUuid: FORM_REVOKED },
    local: { revision: 2, formUuid: FORM_REVOKED },
    expect: 'local',
    result: 'DEFERRED',
    code: 'GRANT_REVOKED',
    after: 'unchanged',
  },
  {
    name: 'no grant for this consumer',
    fc: { formUuid: FORM_NO_GRANT },
    local: null,
    expect: 'missing',
    result: 'DEFERRED',
    code: 'GRANT_MISSING',
    after: 'absent',
  },
  {
    name: 'answer absent at FC',
    fc: null,
    local: null,
    expect: 'missing',
    result: 'DEFERRED',
    code: 'ANSWER_NOT_AT_FC',
    after: 'absent',
  },
  {
    name: 'answer of another school at FC',
    fc: { schId: 6 },
    local: null,
    expect: 'missing',
    result: 'DEFERRED',
    code: 'SCHOOL_MISMATCH',
    after: 'absent',
  },
  {
    name: 'local row of another form',
    fc: {},
    local: { revision: 2, formUuid: OTHER_FORM },
    expect: 'local',
    result: 'DEFERRED',
    code: 'FORM_MISMATCH',
    after: 'unchanged',
  },
];

describe('repair-authoritative, one answer: every result from every local state (real MariaDB)', () => {
  for (const c of CASES) {
    test(`${c.name} → ${c.result} ${c.code}; the dry run writes nothing; the row, projection_version, untouched columns and audit row afterwards`, async () => {
      const answerUuid = randomUUID();
      const formUuid = c.fc?.formUuid ?? FORM;
      const fc = c.fc
        ? await insertFcAnswer(dbs.admin, dbs.fcName, {
            answerUuid,
            formUuid,
            schId: c.fc.schId ?? 5,
            revision: c.fc.revision ?? 3,
            isDeleted: c.fc.isDeleted ?? 0,
          })
        : null;
      if (c.local) {
        await insertProjection(dbs.admin, dbs.shName, {
          answerUuid,
          formUuid: c.local.formUuid ?? FORM,
          revision: c.local.revision,
          ...(c.local.sameHash ? { contentHash: fc!.contentHash, snapshotJson: fc!.snapshotJson } : {}),
          isDeleted: c.local.isDeleted ?? 0,
          conflictFlag: c.local.conflictFlag ?? 0,
          retiredAt: c.local.retired ? '2026-11-01 00:00:00' : null,
        });
      }
      const before = await projectionRow(dbs.admin, dbs.shName, answerUuid);
      const expectFlags =
        c.expect === 'missing'
          ? ['--expect-missing']
          : c.expect === 'local'
            ? [
                '--expected-revision',
                String(before!['answer_revision']),
                '--expected-hash',
                String(before!['content_hash']),
                '--expected-is-deleted',
                String(before!['is_deleted']),
              ]
            : [
                '--expected-revision',
                String(c.expect.revision),
                '--expected-hash',
                c.expect.hash,
                '--expected-is-deleted',
                String(c.expect.isDeleted),
              ];
      const args = [
        '--school',
        '5',
        '--answer',
        answerUuid,
        ...expectFlags,
        ...(c.maxRereads !== undefined ? ['--max-rereads', String(c.maxRereads)] : []),
      ];
      const exit = c.result === 'APPLIED' ? 0 : 1;

      const sums = await checksums();
      const dry = await repair(args);
      expect(dry.stderr).toBe('');
      expect(dry.code).toBe(exit);
      expect(resultOf(dry.stdout)).toMatchObject({
        result: dryOf(c.result),
        code: dryOf(c.code),
        written: false,
        dryRun: true,
        rereads: c.rereads ?? 0,
      });
      expect(String(resultOf(dry.stdout)['reason'])).toMatch(new RegExp(`^${dryOf(c.code)}: `));
      const drySummary = summaryOf(dry.stdout);
      expect(Object.keys(drySummary['byResult'] as object)).toEqual([
        'WOULD_APPLY',
        'LOCAL_CHANGED',
        'LOCAL_AHEAD',
        'DEFERRED',
      ]);
      expect(drySummary).toMatchObject({
        dryRun: true,
        byResult: { [dryOf(c.result)]: 1 },
        byCode: { [dryOf(c.code)]: 1 },
        wouldInsert: c.after === 'inserted' ? 1 : 0,
        wouldUpdate: c.after === 'repaired' ? 1 : 0,
      });
      if (c.result === 'APPLIED') expect(dry.stdout).not.toMatch(EXECUTED_WORDS);
      expect(await checksums()).toBe(sums);

      const r = await repair([...args, '--execute', '--run-id', `run-${answerUuid.slice(0, 8)}`]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(exit);
      const res = resultOf(r.stdout);
      expect(res).toMatchObject({
        answerUuid,
        schId: '5',
        result: c.result,
        code: c.code,
        dryRun: false,
        rereads: c.rereads ?? 0,
      });
      expect(String(res['reason'])).toMatch(new RegExp(`^${c.code}: `));
      expect(summaryOf(r.stdout)).toMatchObject({
        exitCode: exit,
        items: 1,
        decided: 1,
        refused: exit,
        proofId: 'INC-7',
        consumerAppKey: KEY,
      });

      const after = await projectionRow(dbs.admin, dbs.shName, answerUuid);
      switch (c.after) {
        case 'unchanged':
        case 'absent':
          expect(after).toEqual(before);
          break;
        case 'inserted':
          expect(after).toMatchObject({
            sch_id: '5',
            form_uuid: formUuid,
            form_version: 4,
            answer_revision: String(c.fc?.revision ?? 3),
            content_hash: fc!.contentHash,
            is_deleted: c.fc?.isDeleted ?? 0,
            snapshot_json: fc!.snapshotJson,
            link_state: 'UNLINKED',
            intent_id: null,
            apply_id: null,
            flow_guid: null,
            biz_ext_json: null,
            conflict_flag: 0,
            projection_version: '1',
            retired_at: null,
            last_repair_proof_id: 'INC-7',
          });
          expect(after!['update_time']).toBe(after!['create_time']);
          expect(after!['create_time']).toEqual(expect.any(String));
          expect(after!['last_repaired_at']).toEqual(expect.any(String));
          break;
        case 'repaired':
          expect(pick(after, UNTOUCHED_COLUMNS)).toEqual(pick(before, UNTOUCHED_COLUMNS));
          expect(after).toMatchObject({
            form_version: 4,
            answer_revision: String(c.fc?.revision ?? 3),
            content_hash: fc!.contentHash,
            is_deleted: c.fc?.isDeleted ?? 0,
            snapshot_json: fc!.snapshotJson,
            conflict_flag: 0,
            projection_version: String(Number(before!['projection_version']) + 1),
            last_repair_proof_id: 'INC-7',
          });
          expect(String(after!['update_time']) > String(before!['update_time'])).toBe(true);
          expect(after!['last_repaired_at']).toEqual(expect.any(String));
          break;
      }

      const audit = await auditRows(dbs.admin, dbs.shName, answerUuid);
      expect(audit).toHaveLength(1 + (c.rereads ?? 0));
      const last = audit.at(-1)!;
      expect(last).toMatchObject({
        action: 'REPAIR_AUTHORITATIVE',
        outcome: c.result,
        proof_id: 'INC-7',
        run_id: `run-${answerUuid.slice(0, 8)}`,
        sch_id: '5',
        answer_uuid: answerUuid,
      });
      expect(String(last['reason'])).toMatch(new RegExp(`^${c.code}: `));
      const observed = JSON.parse(String(last['observed_json'])) as Record<string, unknown>;
      expect(observed['code']).toBe(c.code);
      if (c.rereads) expect(audit[0]).toMatchObject({ outcome: 'LOCAL_CHANGED' });

      const lines = evidenceOf(answerUuid);
      expect(lines.map((l) => [l['dryRun'], l['result']])).toEqual([
        ...(c.rereads ? [[true, 'LOCAL_CHANGED']] : []),
        [true, dryOf(c.result)],
        ...(c.rereads ? [[false, 'LOCAL_CHANGED']] : []),
        [false, c.result],
      ]);
      expect(lines.at(-1)).toMatchObject({
        format: 'fcctl.repair-evidence.v1',
        proofId: 'INC-7',
        code: c.code,
        written: c.after === 'inserted' || c.after === 'repaired',
      });
    });
  }

  test('a repeated execution of an applied repair changes nothing more (ALREADY_CURRENT, projection_version kept)', async () => {
    const answerUuid = randomUUID();
    await insertFcAnswer(dbs.admin, dbs.fcName, { answerUuid, formUuid: FORM });
    await insertProjection(dbs.admin, dbs.shName, { answerUuid, formUuid: FORM, revision: 2 });
    const args = [
      '--school',
      '5',
      '--answer',
      answerUuid,
      '--expected-revision',
      '2',
      '--expected-hash',
      hashOf(`${answerUuid}:2`),
      '--expected-is-deleted',
      '0',
      '--execute',
    ];
    expect(resultOf((await repair(args)).stdout)).toMatchObject({ result: 'APPLIED', code: 'STALE_REPAIRED' });
    const once = await projectionRow(dbs.admin, dbs.shName, answerUuid);
    const again = await repair(args);
    expect(again.code).toBe(0);
    expect(resultOf(again.stdout)).toMatchObject({
      result: 'APPLIED',
      code: 'ALREADY_CURRENT',
      rereads: 1,
      written: false,
    });
    expect(await projectionRow(dbs.admin, dbs.shName, answerUuid)).toEqual(once);
  });

  test('evidence holds no secret: the database password never appears', async () => {
    const password = decodeURIComponent(new URL(testMysqlUrl()).password);
    if (password) expect(readFileSync(evidence, 'utf8')).not.toContain(password);
    expect(readFileSync(evidence, 'utf8')).not.toContain('mysql://');
  });
});

describe('--envelope FILE', () => {
  const envelopeFor = (
    fc: { answerUuid: string; snapshotJson: string; contentHash: string },
    over: Partial<DeliveryRow> = {},
  ) =>
    buildEnvelope(
      {
        id: '1',
        event_id: randomUUID(),
        event_type: 'updated',
        source_app_key: '100021',
        consumer_app_key: KEY,
        consumer_school_id: '5',
        grant_version: '2',
        form_uuid: FORM,
        form_version: 4,
        answer_uuid: fc.answerUuid,
        answer_revision: '3',
        is_deleted: 0,
        content_hash: fc.contentHash,
        occurred_at: '2026-10-22 09:30:00',
        snapshot_json: fc.snapshotJson,
        state: 'PENDING',
        retry_count: 0,
        replay_op_digest: null,
        ...over,
      },
      'Asia/Shanghai',
    );

  test('repairs from the envelope (stored canonical, intent left out), and the grant is still re-read: another grant version is DEFERRED', async () => {
    const fc = await insertFcAnswer(dbs.admin, dbs.fcName, { answerUuid: randomUUID(), formUuid: FORM });
    await insertProjection(dbs.admin, dbs.shName, { answerUuid: fc.answerUuid, formUuid: FORM, revision: 2 });
    const args = [
      '--school',
      '5',
      '--answer',
      fc.answerUuid,
      '--expected-revision',
      '2',
      '--expected-hash',
      hashOf(`${fc.answerUuid}:2`),
      '--expected-is-deleted',
      '0',
      '--execute',
    ];
    // The same snapshot as sent: members in another order, 12.50 as written, and the consumer's intent.
    const withIntent = `{"intent":{"intentId":"svchall-1","consumerAppKey":"${KEY}"},${fc.snapshotJson.slice(1).replace('"amount":12.5', '"amount":12.50')}`;
    expect(withIntent).toContain('"amount":12.50');

    const old = join(tmp, 'old-grant.json');
    writeFileSync(old, envelopeFor(fc, { grant_version: '1', snapshot_json: withIntent }));
    const refused = await repair([...args, '--envelope', old]);
    expect(refused.code).toBe(1);
    expect(resultOf(refused.stdout)).toMatchObject({ result: 'DEFERRED', code: 'GRANT_VERSION_CHANGED' });

    const good = join(tmp, 'good.json');
    writeFileSync(good, envelopeFor(fc, { snapshot_json: withIntent }));
    const r = await repair([...args, '--envelope', good]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(resultOf(r.stdout)).toMatchObject({
      result: 'APPLIED',
      code: 'STALE_REPAIRED',
      authoritative: { revision: '3', contentHash: fc.contentHash, grantVersion: '2' },
    });
    expect(summaryOf(r.stdout)).toMatchObject({ source: 'envelope' });
    const runLine = readFileSync(evidence, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l['type'] === 'run')
      .at(-1);
    expect(runLine).toMatchObject({
      mode: 'single',
      envelope: good,
      envelopeSha256: createHash('sha256').update(readFileSync(good)).digest('hex'),
      execute: true,
    });
    expect(await projectionRow(dbs.admin, dbs.shName, fc.answerUuid)).toMatchObject({
      snapshot_json: fc.snapshotJson,
      content_hash: fc.contentHash,
      answer_revision: '3',
    });
  });

  test("an envelope with another formVersion than FC's (the hash does not cover it) → DEFERRED ENVELOPE_NOT_CURRENT, no form_version written", async () => {
    const fc = await insertFcAnswer(dbs.admin, dbs.fcName, { answerUuid: randomUUID(), formUuid: FORM });
    await insertProjection(dbs.admin, dbs.shName, { answerUuid: fc.answerUuid, formUuid: FORM, revision: 2 });
    const args = [
      '--school',
      '5',
      '--answer',
      fc.answerUuid,
      '--expected-revision',
      '2',
      '--expected-hash',
      hashOf(`${fc.answerUuid}:2`),
      '--expected-is-deleted',
      '0',
      '--execute',
      '--run-id',
      `fv-${fc.answerUuid.slice(0, 8)}`,
    ];
    const file = join(tmp, 'other-form-version.json');
    // FC's answer has form_version 4; the envelope's snapshot, hash, revision and grant are FC's own
    writeFileSync(file, envelopeFor(fc, { form_version: 5 }));
    const before = await projectionRow(dbs.admin, dbs.shName, fc.answerUuid);
    const r = await repair([...args, '--envelope', file]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    expect(resultOf(r.stdout)).toMatchObject({ result: 'DEFERRED', code: 'ENVELOPE_NOT_CURRENT', written: false });
    expect(resultOf(r.stdout)['reason']).toMatch(/FC now has form version 4 \(the envelope 5\)/);
    expect(await projectionRow(dbs.admin, dbs.shName, fc.answerUuid)).toEqual(before);
    expect(
      (await auditRows(dbs.admin, dbs.shName, fc.answerUuid)).map((a) => [
        a['outcome'],
        String(a['reason']).split(':')[0],
      ]),
    ).toEqual([['DEFERRED', 'ENVELOPE_NOT_CURRENT']]);
    // the same envelope with FC's form version repairs
    writeFileSync(file, envelopeFor(fc, { form_version: 4 }));
    const ok = await repair([...args, '--envelope', file]);
    expect(ok.code).toBe(0);
    expect(await projectionRow(dbs.admin, dbs.shName, fc.answerUuid)).toMatchObject({
      form_version: 4,
      answer_revision: '3',
      content_hash: fc.contentHash,
    });
  });

  test('a dry run on a terminal prints WOULD_APPLY and "would update", never APPLIED or a repaired code', async () => {
    const fc = await insertFcAnswer(dbs.admin, dbs.fcName, { answerUuid: randomUUID(), formUuid: FORM });
    await insertProjection(dbs.admin, dbs.shName, { answerUuid: fc.answerUuid, formUuid: FORM, revision: 2 });
    const sums = await checksums();
    const r = await runCli(
      [
        'projection',
        'repair-authoritative',
        '--consumer',
        KEY,
        '--proof-id',
        'INC-7',
        '--evidence',
        evidence,
        '--school',
        '5',
        '--answer',
        fc.answerUuid,
        '--expected-revision',
        '2',
        '--expected-hash',
        hashOf(`${fc.answerUuid}:2`),
        '--expected-is-deleted',
        '0',
      ],
      { env, tty: true },
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^WOULD_APPLY {2}WOULD_REPAIR_STALE: would update revision 2 → 3$/m);
    expect(r.stdout).toMatch(/wouldUpdate\s+1/);
    expect(r.stdout).not.toMatch(/\bAPPLIED\b|REPAIRED|\binserted\b|\bupdated\b/);
    expect(await checksums()).toBe(sums);
  });
});

describe("--envelope FILE that is not FC's current answer", () => {
  test('an older envelope (same revision, another hash) or one for an answer FC no longer has → DEFERRED, nothing written', async () => {
    const fc = await insertFcAnswer(dbs.admin, dbs.fcName, { answerUuid: randomUUID(), formUuid: FORM });
    await insertProjection(dbs.admin, dbs.shName, { answerUuid: fc.answerUuid, formUuid: FORM, revision: 2 });
    const args = [
      '--school',
      '5',
      '--answer',
      fc.answerUuid,
      '--expected-revision',
      '2',
      '--expected-hash',
      hashOf(`${fc.answerUuid}:2`),
      '--expected-is-deleted',
      '0',
      '--execute',
    ];
    const other =
      '{"answerNo":null,"appCode":"demo","code":"c","createTime":null,"schId":5,"status":"s","subjectId":null,"submitterId":1,"updateTime":null,"values":{"old":true}}';
    const otherHash = (canonicalize(other) as { hash: string }).hash;
    const file = join(tmp, 'stale-envelope.json');
    writeFileSync(
      file,
      buildEnvelope(
        {
          id: '1',
          event_id: randomUUID(),
          event_type: 'updated',
          source_app_key: '100021',
          consumer_app_key: KEY,
          consumer_school_id: '5',
          grant_version: '2',
          form_uuid: FORM,
          form_version: 4,
          answer_uuid: fc.answerUuid,
          answer_revision: '3',
          is_deleted: 0,
          content_hash: otherHash,
          occurred_at: '2026-10-22 09:30:00',
          snapshot_json: other,
          state: 'PENDING',
          retry_count: 0,
          replay_op_digest: null,
        },
        'Asia/Shanghai',
      ),
    );
    const before = await projectionRow(dbs.admin, dbs.shName, fc.answerUuid);
    const r = await repair([...args, '--envelope', file]);
    expect(r.code).toBe(1);
    expect(resultOf(r.stdout)).toMatchObject({ result: 'DEFERRED', code: 'ENVELOPE_NOT_CURRENT' });
    expect(resultOf(r.stdout)['reason']).toMatch(/FC now has hash/);
    expect(await projectionRow(dbs.admin, dbs.shName, fc.answerUuid)).toEqual(before);
    // FC no longer has the answer at all
    await dbs.admin.query(`DELETE FROM \`${dbs.fcName}\`.answer WHERE answer_uuid = ?`, [fc.answerUuid]);
    const gone = await repair([...args, '--envelope', file]);
    expect(gone.code).toBe(1);
    expect(resultOf(gone.stdout)).toMatchObject({ result: 'DEFERRED', code: 'ANSWER_NOT_AT_FC' });
    expect(await projectionRow(dbs.admin, dbs.shName, fc.answerUuid)).toEqual(before);
  });
});

describe('races with a consumer (real locks: the consumer holds the row until the repair waits on it)', () => {
  /** Runs `during` in an open transaction on its own connection, starts the repair, commits once the repair's write waits on the lock. */
  async function race(
    during: (conn: mysql.Connection) => Promise<void>,
    statementPrefix: string,
    args: readonly string[],
  ) {
    const conn = await mysql.createConnection({
      uri: `${testMysqlUrl().replace(/\/$/, '')}/${dbs.shName}`,
      dateStrings: true,
      bigNumberStrings: true,
      supportBigNumbers: true,
    });
    try {
      await conn.beginTransaction();
      await during(conn);
      const running = repair(args);
      await waitFor(
        `the repair's ${statementPrefix} to wait on the consumer's lock`,
        async () => {
          const [rows] = await dbs.admin.query(
            'SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> ? AND INFO LIKE ?',
            [dbs.shName, conn.threadId, `${statementPrefix}%`],
          );
          return Number((rows as Array<{ n: string }>)[0]!.n) > 0;
        },
        20_000,
      );
      await conn.commit();
      return await running;
    } finally {
      await conn.end();
    }
  }

  const consumerWrite = (answerUuid: string, revision: number) => async (conn: mysql.Connection) => {
    await conn.query(
      'UPDATE fc_answer_projection SET answer_revision = ?, content_hash = ?, snapshot_json = \'{"consumer":true}\', projection_version = projection_version + 1 WHERE answer_uuid = ?',
      [revision, hashOf(`consumer:${revision}`), answerUuid],
    );
  };

  for (const [rereads, result, code] of [
    [0, 'LOCAL_CHANGED', 'EXPECTED_MISMATCH'],
    [3, 'LOCAL_AHEAD', 'LOCAL_REVISION_AHEAD'],
  ] as const) {
    test(`a consumer write between read and UPDATE → LOCAL_CHANGED${rereads ? ', then re-read → LOCAL_AHEAD' : ''}; the consumer's write stays`, async () => {
      const answerUuid = randomUUID();
      await insertFcAnswer(dbs.admin, dbs.fcName, { answerUuid, formUuid: FORM });
      await insertProjection(dbs.admin, dbs.shName, { answerUuid, formUuid: FORM, revision: 2 });
      const r = await race(consumerWrite(answerUuid, 4), 'UPDATE fc_answer_projection SET form_version', [
        '--school',
        '5',
        '--answer',
        answerUuid,
        '--expected-revision',
        '2',
        '--expected-hash',
        hashOf(`${answerUuid}:2`),
        '--expected-is-deleted',
        '0',
        '--execute',
        '--max-rereads',
        String(rereads),
      ]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(1);
      expect(resultOf(r.stdout)).toMatchObject({ result, code, rereads: rereads ? 1 : 0, written: false });
      expect(await projectionRow(dbs.admin, dbs.shName, answerUuid)).toMatchObject({
        answer_revision: '4',
        content_hash: hashOf('consumer:4'),
        snapshot_json: '{"consumer":true}',
        projection_version: '8',
        last_repair_proof_id: null,
      });
      const audit = await auditRows(dbs.admin, dbs.shName, answerUuid);
      expect(audit.map((a) => a['outcome'])).toEqual(rereads ? ['LOCAL_CHANGED', 'LOCAL_AHEAD'] : ['LOCAL_CHANGED']);
      expect(JSON.parse(String(audit[0]!['observed_json']))).toMatchObject({ raced: true, local: { revision: '4' } });
    });
  }

  test("a concurrent insert of a missing row: the repair's INSERT rolls back on the unique key and re-reads (LOCAL_CHANGED), one row, the consumer's", async () => {
    const answerUuid = randomUUID();
    const fc = await insertFcAnswer(dbs.admin, dbs.fcName, { answerUuid, formUuid: FORM });
    const r = await race(
      async (conn) => {
        await conn.query(
          "INSERT INTO fc_answer_projection (answer_uuid, sch_id, form_uuid, form_version, answer_revision, content_hash, is_deleted, snapshot_json, link_state, projection_version, create_time) VALUES (?, 5, ?, 4, 3, ?, 0, ?, 'UNLINKED', 0, NOW())",
          [answerUuid, FORM, fc.contentHash, fc.snapshotJson],
        );
      },
      'INSERT INTO fc_answer_projection',
      ['--school', '5', '--answer', answerUuid, '--expect-missing', '--execute', '--max-rereads', '0'],
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    expect(resultOf(r.stdout)).toMatchObject({ result: 'LOCAL_CHANGED', code: 'EXPECTED_MISMATCH', written: false });
    const [rows] = await dbs.admin.query(
      `SELECT projection_version, last_repair_proof_id FROM \`${dbs.shName}\`.fc_answer_projection WHERE answer_uuid = ?`,
      [answerUuid],
    );
    expect(rows).toEqual([{ projection_version: '0', last_repair_proof_id: null }]);
    const audit = await auditRows(dbs.admin, dbs.shName, answerUuid);
    expect(audit.map((a) => a['outcome'])).toEqual(['LOCAL_CHANGED']);
    expect(JSON.parse(String(audit[0]!['observed_json']))).toMatchObject({ raced: true, write: null });

    // With re-reads, the same request settles: the consumer's row already is FC's.
    const again = await repair(['--school', '5', '--answer', answerUuid, '--expect-missing', '--execute']);
    expect(again.code).toBe(0);
    expect(resultOf(again.stdout)).toMatchObject({ result: 'APPLIED', code: 'ALREADY_CURRENT', rereads: 1 });
  });
});

describe('bad input → exit 2, nothing read or written (the database URLs point nowhere)', () => {
  const nowhere = () => ({
    ...env,
    FCCTL_FC_DATABASE_URL: 'mysql://fcctl:pw@127.0.0.1:9/nope',
    FCCTL_SH_DATABASE_URL: 'mysql://fcctl:pw@127.0.0.1:9/nope',
  });
  const A = '0a000000-0000-4000-8000-000000000001';
  const triple = ['--expected-revision', '2', '--expected-hash', 'a'.repeat(64), '--expected-is-deleted', '0'];
  const base = ['--school', '5', '--answer', A, ...triple];
  const file = (name: string, content: string | Buffer) => {
    const p = join(tmp, name);
    writeFileSync(p, content);
    return p;
  };
  const env0 = (over: Partial<DeliveryRow> = {}) =>
    buildEnvelope(
      {
        id: '1',
        event_id: randomUUID(),
        event_type: 'updated',
        source_app_key: '100021',
        consumer_app_key: KEY,
        consumer_school_id: '5',
        grant_version: '2',
        form_uuid: FORM,
        form_version: 4,
        answer_uuid: A,
        answer_revision: '3',
        is_deleted: 0,
        content_hash: 'd4c0b9d9de3fcd1ff5a2a0c5c2a4d80bcb3e78e31a6b6ba1c4b1e0f0b9c3d9a1',
        occurred_at: '2026-10-22 09:30:00',
        snapshot_json: '{}',
        state: 'PENDING',
        retry_count: 0,
        replay_op_digest: null,
        ...over,
      },
      'Asia/Shanghai',
    );
  const snapshot =
    '{"schId":5,"appCode":"a","code":"c","submitterId":1,"subjectId":null,"status":"s","values":{},"answerNo":null,"createTime":"2026-10-21T08:00:00","updateTime":null}';
  /** a valid envelope of `snapshot` (its hash from `canon hash`, in beforeAll) */
  const goodEnvelope = (over: Partial<DeliveryRow> = {}) =>
    env0({ snapshot_json: snapshot, content_hash: SNAPSHOT_HASH, ...over });
  let SNAPSHOT_HASH = '';
  const planLine = (o: Record<string, unknown> = {}) =>
    JSON.stringify({
      category: 'STALE_LOCAL',
      answerUuid: A,
      schId: '5',
      formUuid: FORM,
      expectedRevision: '2',
      expectedHash: 'a'.repeat(64),
      expectedIsDeleted: false,
      fcRevision: '3',
      fcContentHash: 'b'.repeat(64),
      fcIsDeleted: false,
      ...o,
    });

  beforeAll(async () => {
    const r = await runCli(['canon', 'hash', file('snap.json', snapshot)], { env });
    SNAPSHOT_HASH = r.stdout.trim();
    expect(SNAPSHOT_HASH).toMatch(/^[0-9a-f]{64}$/);
  });

  test('control: a valid request against those URLs is exit 3 (it would connect)', async () => {
    const r = await repair(base, { env: nowhere() });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/cannot connect to FC database at mysql:\/\/fcctl:\*\*\*@127\.0\.0\.1:9\/nope/);
  });

  const cases: Array<[string, () => string[], RegExp]> = [
    ['proof id empty', () => ['--proof-id', '', ...base], /--proof-id is empty/],
    ['proof id of 129 characters', () => ['--proof-id', 'p'.repeat(129), ...base], /longer than 128/],
    ['proof id with a newline', () => ['--proof-id', 'p\nq', ...base], /control characters/],
    ['answer not a UUID', () => ['--school', '5', '--answer', 'a1b2', ...triple], /--answer "a1b2" is not a UUID/],
    ['school 0', () => ['--school', '0', '--answer', A, ...triple], /--school/],
    ['school negative', () => ['--school', '-5', '--answer', A, ...triple], /--school/],
    ['school not a number', () => ['--school', 'x', '--answer', A, ...triple], /--school/],
    [
      'hash in upper case',
      () => [
        '--school',
        '5',
        '--answer',
        A,
        '--expected-revision',
        '2',
        '--expected-hash',
        'A'.repeat(64),
        '--expected-is-deleted',
        '0',
      ],
      /64 lowercase hex/,
    ],
    [
      'hash too short',
      () => [
        '--school',
        '5',
        '--answer',
        A,
        '--expected-revision',
        '2',
        '--expected-hash',
        'a'.repeat(63),
        '--expected-is-deleted',
        '0',
      ],
      /64 lowercase hex/,
    ],
    [
      'isDeleted 2',
      () => [
        '--school',
        '5',
        '--answer',
        A,
        '--expected-revision',
        '2',
        '--expected-hash',
        'a'.repeat(64),
        '--expected-is-deleted',
        '2',
      ],
      /must be 0 or 1/,
    ],
    [
      'revision negative',
      () => [
        '--school',
        '5',
        '--answer',
        A,
        '--expected-revision',
        '-1',
        '--expected-hash',
        'a'.repeat(64),
        '--expected-is-deleted',
        '0',
      ],
      /not a whole number/,
    ],
    ['half a triple', () => ['--school', '5', '--answer', A, '--expected-revision', '2'], /--expect-missing/],
    ['a triple and --expect-missing', () => [...base, '--expect-missing'], /cannot be combined/],
    ['neither an answer nor a plan', () => ['--school', '5'], /--plan FILE/],
    [
      'a plan and an answer',
      () => ['--plan', file('p0.jsonl', planLine()), '--answer', A],
      /--plan cannot be combined/,
    ],
    ['run id of 65 characters', () => ['--run-id', 'r'.repeat(65), ...base], /--run-id/],
    ['concurrency 0', () => ['--concurrency', '0', ...base], /--concurrency/],
    ['max rereads 11', () => ['--max-rereads', '11', ...base], /--max-rereads/],
    ['consumer key with a space', () => ['--consumer', 'a b', ...base], /--consumer/],
    [
      'envelope not JSON',
      () => [...base, '--envelope', file('e1.json', '{"protocolVersion":')],
      /--envelope is not JSON/,
    ],
    [
      'envelope event id of 37 characters',
      () => [...base, '--envelope', file('e2.json', goodEnvelope({ event_id: 'e'.repeat(37) }))],
      /eventId must be a string of 1 to 36 characters/,
    ],
    [
      'envelope hash mismatch',
      () => [...base, '--envelope', file('e3.json', goodEnvelope({ content_hash: 'c'.repeat(64) }))],
      /SNAPSHOT_HASH_MISMATCH/,
    ],
    [
      'envelope of another answer',
      () => [
        ...base,
        '--envelope',
        file('e4.json', goodEnvelope({ answer_uuid: '0a000000-0000-4000-8000-000000000002' })),
      ],
      /is not --answer/,
    ],
    [
      'envelope of another school',
      () => [...base, '--envelope', file('e5.json', goodEnvelope({ consumer_school_id: '6' }))],
      /consumerSchoolId 6 is not --school 5/,
    ],
    [
      'envelope of another consumer',
      () => [...base, '--envelope', file('e6.json', goodEnvelope({ consumer_app_key: '100101' }))],
      /consumerAppKey "100101" is not --consumer/,
    ],
    [
      'envelope with a non-UUID form',
      () => [...base, '--envelope', file('e7.json', goodEnvelope({ form_uuid: 'form-1' }))],
      /formUuid "form-1" is not a UUID/,
    ],
    ['envelope file missing', () => [...base, '--envelope', join(tmp, 'nope.json')], /no such file/],
    ['plan file missing', () => ['--plan', join(tmp, 'nope.jsonl')], /no such file/],
    ['plan line not JSON', () => ['--plan', file('p1.jsonl', `${planLine()}\n{"x":`)], /line 2: malformed JSON/],
    [
      'plan of local-ahead rows',
      () => ['--plan', file('p2.jsonl', planLine({ category: 'LOCAL_AHEAD' }))],
      /LOCAL_AHEAD/,
    ],
    ['plan with a school 0', () => ['--plan', file('p3.jsonl', planLine({ schId: '0' }))], /schId "0"/],
    [
      'plan with a non-UUID',
      () => ['--plan', file('p4.jsonl', planLine({ answerUuid: 'x' }))],
      /answerUuid "x" is not a UUID/,
    ],
    [
      'plan with an answer twice',
      () => ['--plan', file('p5.jsonl', `${planLine()}\n${planLine()}\n`)],
      /already on line 1/,
    ],
    [
      'plan of another school than --school',
      () => ['--school', '6', '--plan', file('p6.jsonl', planLine())],
      /is not --school 6/,
    ],
    ['plan not UTF-8', () => ['--plan', file('p7.jsonl', Buffer.from([0x7b, 0xff, 0x7d]))], /not UTF-8/],
  ];
  for (const [name, args, message] of cases) {
    test(name, async () => {
      const ev = join(tmp, `never-${randomUUID()}.jsonl`);
      const r = await runCli(
        [
          '--json',
          'projection',
          'repair-authoritative',
          '--consumer',
          KEY,
          '--proof-id',
          'INC-7',
          '--evidence',
          ev,
          ...args(),
        ],
        { env: nowhere() },
      );
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stdout).toBe('');
      expect(existsSync(ev)).toBe(false);
    });
  }

  test('an evidence file that cannot be opened is exit 2', async () => {
    const r = await runCli(
      [
        '--json',
        'projection',
        'repair-authoritative',
        '--consumer',
        KEY,
        '--proof-id',
        'INC-7',
        '--evidence',
        join(tmp, 'no-such-dir', 'e.jsonl'),
        ...base,
      ],
      { env: nowhere() },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--evidence .*cannot open for appending: ENOENT/);
  });

  test('an empty plan is exit 0 without opening a database (run and end lines in the evidence)', async () => {
    const ev = join(tmp, 'empty-evidence.jsonl');
    const r = await runCli(
      [
        '--json',
        'projection',
        'repair-authoritative',
        '--consumer',
        KEY,
        '--proof-id',
        'INC-7',
        '--evidence',
        ev,
        '--plan',
        file('empty.jsonl', ''),
      ],
      { env: nowhere() },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ exitCode: 0, items: 0, decided: 0 });
    expect(
      readFileSync(ev, 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => (JSON.parse(l) as { type: string }).type),
    ).toEqual(['run', 'end']);
  });

  test('a missing --consumer or --proof-id is exit 2', async () => {
    expect(
      (await runCli(['projection', 'repair-authoritative', '--proof-id', 'p', ...base], { env: nowhere() })).code,
    ).toBe(2);
    expect(
      (await runCli(['projection', 'repair-authoritative', '--consumer', KEY, ...base], { env: nowhere() })).code,
    ).toBe(2);
  });
});
