import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { planShSeed, type ShDriftEntry } from '../../src/lib/dev/sh-seed.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { devSeedPlan, seedDevDatabases } from '../helpers/dev-seed.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'rseeded' });

// One school keeps it to three reconcile runs; 100 answers give two seeded rows of each absent kind.
const SEED = 11;
const ANSWERS = 100;
let drift: readonly ShDriftEntry[];

const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;

test.beforeAll(async ({ dbs }) => {
  await seedDevDatabases(dbs.env(), SEED, ANSWERS);
  drift = planShSeed(SEED, devSeedPlan(SEED, ANSWERS)).drift;
});

describe('dev seed → reconcile run → retire-absent prove → retire-absent --execute', () => {
  test('retires exactly the seeded absent rows; rows created after the task start or with a null createTime are refused with their reasons', async ({
    dbs,
    tmp: dir,
  }) => {
    const env = dbs.env();
    const of = (c: ShDriftEntry['category']) => drift.filter((d) => d.category === c);
    expect(of('ABSENT_AT_FC').length).toBeGreaterThan(1);
    const [localRows] = await dbs.admin.query(
      `SELECT answer_uuid, answer_revision, content_hash, is_deleted, create_time, retired_at, retire_proof_id FROM \`${dbs.shName}\`.fc_answer_projection`,
    );
    const local = new Map(
      (localRows as Array<Record<string, string | number | null>>).map((r) => [r['answer_uuid'] as string, r]),
    );
    const retiredBefore = of('RETIRED').map((d) => [
      d.answerUuid,
      local.get(d.answerUuid)!['retired_at'],
      local.get(d.answerUuid)!['retire_proof_id'],
    ]);

    const forms = [...new Set(drift.filter((d) => d.category.startsWith('ABSENT')).map((d) => d.formUuid))];
    const excluded: Array<[string, string]> = [];
    for (const form of forms) {
      const out = join(dir, `run-${form}`);
      const run = await runCli(['--json', 'reconcile', 'run', '--school', '5', '--form', form, '--out-dir', out], {
        env,
      });
      expect(run.code).toBe(0);
      // The candidates, plus — as a hand-made file might — the absent rows the diff rightly left out.
      const taskStart = (JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')) as { taskStart: string }).taskStart;
      const extra = drift
        .filter(
          (d) =>
            d.formUuid === form &&
            (d.category === 'ABSENT_CREATED_AFTER_TASK_START' || d.category === 'ABSENT_CREATE_TIME_NULL'),
        )
        .map((d) => {
          const l = local.get(d.answerUuid)!;
          return JSON.stringify({
            category: 'ABSENT_AT_FC',
            answerUuid: d.answerUuid,
            schId: '5',
            formUuid: form,
            expectedRevision: String(l['answer_revision']),
            expectedHash: l['content_hash'],
            expectedIsDeleted: Number(l['is_deleted']) === 1,
            localCreateTime: l['create_time'],
            taskStart,
          });
        });
      const candidates = join(out, 'candidates-plus.jsonl');
      writeFileSync(
        candidates,
        readFileSync(join(out, 'retire-candidates.jsonl'), 'utf8') + extra.map((l) => `${l}\n`).join(''),
      );
      const proof = join(out, 'proof.json');
      const prove = await runCli(
        [
          '--json',
          'retire-absent',
          'prove',
          '--candidates',
          candidates,
          '--fc-manifest',
          join(out, 'fc-manifest.jsonl'),
          '--out',
          proof,
          '--proof-id',
          `rp-seeded-${form.slice(0, 8)}`,
        ],
        { env },
      );
      expect(prove.stderr).toBe('');
      expect(prove.code).toBe(extra.length > 0 ? 1 : 0);
      for (const x of jsonLines(prove.stdout).filter((l) => l['type'] === 'excluded'))
        excluded.push([x['answerUuid'] as string, x['reason'] as string]);
      const retire = await runCli(['--json', 'retire-absent', '--proof', proof, '--execute'], { env });
      expect(retire.stderr).toBe('');
      expect(retire.code).toBe(0);
      expect(summaryOf(retire.stdout)).toMatchObject({
        refused: 0,
        alreadyRetired: 0,
        retired: of('ABSENT_AT_FC').filter((d) => d.formUuid === form).length,
      });
    }
    const want = [
      ...of('ABSENT_CREATED_AFTER_TASK_START').map((d) => [d.answerUuid, 'CREATED_AFTER_TASK_START']),
      ...of('ABSENT_CREATE_TIME_NULL').map((d) => [d.answerUuid, 'CREATE_TIME_NULL']),
    ];
    expect(want.length).toBeGreaterThanOrEqual(2);
    expect(excluded.sort()).toEqual(want.sort());

    const [after] = await dbs.admin.query(
      `SELECT answer_uuid, retired_at, retire_proof_id FROM \`${dbs.shName}\`.fc_answer_projection WHERE retire_proof_id LIKE 'rp-seeded-%'`,
    );
    expect((after as Array<{ answer_uuid: string }>).map((r) => r.answer_uuid).sort()).toEqual(
      of('ABSENT_AT_FC')
        .map((d) => d.answerUuid)
        .sort(),
    );
    const [untouched] = await dbs.admin.query(
      `SELECT answer_uuid, retired_at, retire_proof_id FROM \`${dbs.shName}\`.fc_answer_projection WHERE answer_uuid IN (?)`,
      [of('RETIRED').map((d) => d.answerUuid)],
    );
    expect(
      (untouched as Array<Record<string, unknown>>)
        .map((r) => [r['answer_uuid'], r['retired_at'], r['retire_proof_id']])
        .sort(),
    ).toEqual(retiredBefore.sort());
    const [audit] = await dbs.admin.query(
      `SELECT outcome, COUNT(*) AS n FROM \`${dbs.shName}\`.fc_reconcile_audit WHERE action = 'RETIRE_ABSENT' GROUP BY outcome`,
    );
    expect(audit).toEqual([{ outcome: 'RETIRED', n: String(of('ABSENT_AT_FC').length) }]);
  });
});
