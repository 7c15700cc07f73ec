/**
 * Least privilege, proven (issue 35 §6): for each command of docs/privileges.md, a MariaDB user
 * holding exactly the grants of that command's `sql` block (no global privilege: USAGE only) runs
 * the command as a real `bin/fcctl` process on a small real data set (dev seed, apply commands, a
 * flow-center stand-in, a broker vhost whose publisher may only write to the delivery exchange).
 * A command that needs a grant the page does not name exits otherwise, or prints "denied": the
 * test fails. The users are this file's own, dropped after each command.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import amqp from 'amqplib';
import { describe, expect } from 'vitest';
import { CONSUMER_QUEUE } from '../../src/lib/doctor/isolation/types.js';
import { APP, APP_FLOW, insertCommands, ownedInstance, uniquePrefix } from '../helpers/apply-commands.js';
import { EXCHANGE, type HardenedBroker, hardenedBroker, mqCtl } from '../helpers/broker.js';
import { type CliResult, cleanEnv, jsonLines, spawnCli } from '../helpers/cli.js';
import { freshDatabases, testMysqlUrl } from '../helpers/db.js';
import { testManagementUrl } from '../helpers/management.js';
import { brokerPermissions, type CommandGrants, grantStatements, privilegesPage } from '../helpers/privileges.js';
import { startService } from '../helpers/service.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'priv', flowApps: APP_FLOW });
const PAGE = privilegesPage();
const CONSUMERS = ['100100', '100101'] as const;
const K = CONSUMERS[0];
const SCHOOL = '5';

type Env = Record<string, string | undefined>;
interface World {
  readonly fcName: string;
  readonly shName: string;
  readonly tmp: string;
  readonly broker: HardenedBroker;
  readonly flowUrl: string;
  readonly admin: import('mysql2/promise').Connection;
  readonly form: string;
  readonly bizPrefix: string;
}
let w: World;

/** A MySQL URL for `user` on database `db` of the test server. */
function urlAs(user: { name: string; password: string }, db: string): string {
  const url = new URL(testMysqlUrl());
  url.username = user.name;
  url.password = user.password;
  url.pathname = `/${db}`;
  return url.toString();
}

/**
 * A user holding exactly `grants` on `fc`/`sh` (its own name, '%' host), the environment of an
 * fcctl run as that user, and its drop. Checked first: SHOW GRANTS lists nothing else (USAGE and
 * the server's grants to PUBLIC apart).
 */
async function userWith(grants: CommandGrants, names: { fc: string; sh: string } = { fc: w.fcName, sh: w.shName }) {
  const user = {
    name: `fcctl_priv_${randomBytes(4).toString('hex')}`,
    password: `pw-${randomBytes(8).toString('hex')}`,
  };
  const account = `'${user.name}'@'%'`;
  await w.admin.query(`CREATE USER ${account} IDENTIFIED BY '${user.password}'`);
  const drop = () => w.admin.query(`DROP USER IF EXISTS ${account}`).then(() => undefined);
  try {
    for (const s of grantStatements(grants, { ...names, user: account })) await w.admin.query(s);
    const [rows] = await w.admin.query(`SHOW GRANTS FOR ${account}`);
    const held = (rows as Array<Record<string, string>>).map((r) => Object.values(r)[0]!);
    // one SHOW GRANTS line per object granted on (the server merges two grants on one object)
    const objects = new Set(grants.grants.map((g) => / ON (\S+) TO /.exec(g)![1]));
    expect(held.filter((g) => !/^GRANT USAGE ON \*\.\* /.test(g))).toHaveLength(objects.size);
  } catch (err) {
    await drop();
    throw err;
  }
  const env = envWith(urlAs(user, names.fc), urlAs(user, names.sh));
  return { env, drop };
}

/** The environment of an fcctl run with these database URLs, the broker's publisher and the stand-in. */
function envWith(fcUrl: string, shUrl: string): Env {
  return cleanEnv({
    FCCTL_FC_DATABASE_URL: fcUrl,
    FCCTL_SH_DATABASE_URL: shUrl,
    FCCTL_AMQP_URL: w.broker.publisherUrl,
    FCCTL_AMQP_MANAGEMENT_URL: testManagementUrl(),
    FCCTL_FLOW_URL: w.flowUrl,
    FCCTL_APP_KEY: APP.key,
    FCCTL_APP_SECRET: APP.secret,
    FCCTL_APP_CODE: 'demo-publisher',
  });
}

/** doctor's check lines by name (`--json`). */
const checksOf = (stdout: string): Record<string, Record<string, unknown>> =>
  Object.fromEntries(
    jsonLines(stdout)
      .filter((l) => l['type'] === 'check')
      .map((l) => [String(l['check']), l]),
  );

const grantsOf = (command: string): CommandGrants => {
  const g = PAGE.find((p) => p.command === command);
  if (!g) throw new Error(`docs/privileges.md has no block for ${command}`);
  return g;
};

/** Runs `argv` as a real process and checks its exit code is one of `codes` and nothing was denied. */
async function expectRuns(argv: string[], env: Env, codes: readonly number[], stdin?: string): Promise<CliResult> {
  const r = await spawnCli(argv, { env, ...(stdin !== undefined ? { stdin } : {}), timeoutMs: 90_000 });
  const said = `fcctl ${argv.join(' ')} → ${r.code}\nstderr: ${r.stderr.slice(-2000)}\nstdout: ${r.stdout.slice(-2000)}`;
  expect(`${r.stdout}\n${r.stderr}`, said).not.toMatch(/denied/i);
  expect(codes, said).toContain(r.code);
  return r;
}

/** Runs a `--follow` service as the user until it reports `running` and `settled` holds, then SIGTERM: exit 0. */
async function expectServes(argv: string[], env: Env, settled: () => Promise<boolean>): Promise<void> {
  const s = startService(['--json', ...argv, '--follow'], { env, timeoutMs: 90_000 });
  try {
    await s.waitForLine('running', (l) => l['type'] === 'state' && l['state'] === 'running', 45_000);
    await waitFor('the service to do its work', settled, 45_000, 100);
  } finally {
    const r = await s.stop('SIGTERM');
    const said = `stderr: ${r.stderr.slice(-2000)}\nstdout: ${r.stdout.slice(-2000)}`;
    expect(`${r.stdout}\n${r.stderr}`, said).not.toMatch(/denied/i);
    expect(r.code, said).toBe(0);
  }
}

const count = async (sql: string): Promise<number> => {
  const [rows] = await w.admin.query(sql);
  return Number((rows as Array<{ n: number }>)[0]!.n);
};
const fc = (table: string) => `\`${w.fcName}\`.${table}`;
const sh = (table: string) => `\`${w.shName}\`.${table}`;
const path = (name: string) => join(w.tmp, name);
/** A registry row whose last beat is two hours old (gone), and the count that is 0 once it is deleted. */
async function plantGoneWorker(side: 'fc' | 'sh', command: string): Promise<string> {
  const table = side === 'fc' ? fc('fcctl_worker') : sh('fcctl_worker');
  const id = `priv-gone-${randomBytes(4).toString('hex')}`;
  await w.admin.query(
    `INSERT INTO ${table} (worker_id, command, host, pid, version, started_at, last_beat_at, heartbeat_seconds, state) ` +
      "VALUES (?, ?, 'gone-host', 1, '0', UTC_TIMESTAMP() - INTERVAL 3 HOUR, UTC_TIMESTAMP() - INTERVAL 2 HOUR, 5, 'running')",
    [id, command],
  );
  return `SELECT COUNT(*) AS n FROM ${table} WHERE worker_id = '${id}'`;
}
/** The pair directories of the `--all` run (DIR/<school>/<form>). */
const pairDirs = () =>
  readdirSync(path('all'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) => readdirSync(join(path('all'), d.name)).map((f) => join(path('all'), d.name, f)));
const nonEmpty = (file: string) => {
  try {
    return readFileSync(file, 'utf8').trim() !== '';
  } catch {
    return false;
  }
};

/**
 * Each command of the page, in an order that leaves each the data it needs (the outbox sent before
 * failed/replay, a reconcile before repair and retire). `run(env)` runs it as the user.
 */
const CASES: ReadonlyArray<{ readonly command: string; run(env: Env): Promise<void> }> = [
  {
    command: 'db check',
    run: async (env) => void (await expectRuns(['--json', 'db', 'check'], env, [0])),
  },
  {
    command: 'doctor',
    run: async (env) => {
      const r = await expectRuns(['--json', 'doctor'], env, [0]);
      // and no warning about its privileges: it holds what the page names
      for (const side of ['FC', 'SH']) expect(checksOf(r.stdout)[`${side} database privileges`]?.['status']).toBe('ok');
      await expectRuns(['--json', 'doctor', '--probe'], env, [0]);
    },
  },
  {
    command: 'doctor --isolation',
    run: async (env) => {
      // every item passes, the bindings' app keys read from the FC database's registry included
      const r = await expectRuns(['--json', 'doctor', '--isolation'], env, [0]);
      expect(r.stdout).toMatch(/"check":"isolation: bindings","status":"ok"/);
    },
  },
  {
    command: 'deliveries scan',
    run: async (env) => void (await expectRuns(['--json', 'deliveries', 'scan'], env, [0])),
  },
  {
    command: 'status',
    run: async (env) => void (await expectRuns(['--json', 'status'], env, [0, 1])),
  },
  {
    command: 'deliveries send',
    run: async (env) => {
      await expectRuns(['--json', 'deliveries', 'send'], env, [0, 1]);
      expect(
        await count(`SELECT COUNT(*) AS n FROM ${fc('answer_delivery')} WHERE state = 'BROKER_ACCEPTED'`),
      ).toBeGreaterThan(0);
    },
  },
  {
    command: 'deliveries send --follow',
    run: async (env) => {
      const ids = `SELECT id FROM ${fc('answer_delivery')} WHERE state = 'BROKER_ACCEPTED' ORDER BY id LIMIT 5`;
      const [rows] = await w.admin.query(ids);
      const list = (rows as Array<{ id: number }>).map((r) => r.id).join(', ');
      await w.admin.query(
        `UPDATE ${fc('answer_delivery')} SET state = 'PENDING', next_retry_at = NULL WHERE id IN (${list})`,
      );
      const sent = `SELECT COUNT(*) AS n FROM ${fc('answer_delivery')} WHERE id IN (${list}) AND state = 'BROKER_ACCEPTED'`;
      // a registry row of a process gone two hours: the relay deletes it (issue 36 §8) with its grants
      const gone = await plantGoneWorker('fc', 'deliveries send');
      await expectServes(
        ['deliveries', 'send', '--poll-interval', '0.2'],
        env,
        async () => (await count(sent)) === 5 && (await count(gone)) === 0,
      );
    },
  },
  {
    command: 'deliveries failed',
    run: async (env) => {
      await w.admin.query(
        `UPDATE ${fc('answer_delivery')} SET state = 'FAILED', last_error = 'BROKER_NACK: test', retry_count = 1, next_retry_at = NOW() + INTERVAL 1 HOUR ` +
          `WHERE consumer_app_key = '${K}' AND consumer_school_id = ${SCHOOL} AND state = 'BROKER_ACCEPTED' ORDER BY id LIMIT 3`,
      );
      await expectRuns(['--json', 'deliveries', 'failed', '--consumer', K, '--school', SCHOOL], env, [0]);
    },
  },
  {
    command: 'deliveries replay',
    run: async (env) => {
      const argv = ['--json', 'deliveries', 'replay', '--consumer', K, '--school', SCHOOL, '--failed'];
      await expectRuns([...argv, '--operation-prefix', 'INC-PRIV', '--execute'], env, [0, 1]);
      expect(await count(`SELECT COUNT(*) AS n FROM ${fc('fcctl_replay_operation')}`)).toBe(3);
    },
  },
  {
    command: 'manifest page',
    run: async (env) => {
      for (const side of ['fc', 'sh'])
        await expectRuns(
          ['--json', 'manifest', 'page', '--side', side, '--school', SCHOOL, '--form', w.form],
          env,
          [0],
        );
    },
  },
  {
    command: 'manifest scan',
    run: async (env) => {
      const [rows] = await w.admin.query('SELECT CAST(NOW() - INTERVAL 1 SECOND AS CHAR) AS t');
      writeFileSync(path('task-start'), (rows as Array<{ t: string }>)[0]!.t);
      for (const side of ['fc', 'sh']) {
        const out = ['--out', path(`${side}.jsonl`), '--checkpoint', path(`${side}.checkpoint.json`)];
        await expectRuns(
          ['--json', 'manifest', 'scan', '--side', side, '--school', SCHOOL, '--form', w.form, ...out],
          env,
          [0],
        );
      }
    },
  },
  {
    command: 'reconcile diff',
    run: async (env) => {
      const files = ['--fc', path('fc.jsonl'), '--sh', path('sh.jsonl')];
      const checkpoints = [
        '--fc-checkpoint',
        path('fc.checkpoint.json'),
        '--sh-checkpoint',
        path('sh.checkpoint.json'),
      ];
      const start = ['--task-start', readFileSync(path('task-start'), 'utf8'), '--out-dir', path('diff')];
      await expectRuns(['--json', 'reconcile', 'diff', ...files, ...checkpoints, ...start], env, [0, 1]);
    },
  },
  {
    command: 'reconcile run',
    run: async (env) => {
      const argv = ['--json', 'reconcile', 'run', '--school', SCHOOL, '--form', w.form, '--out-dir', path('run')];
      await expectRuns(argv, env, [0, 1]);
    },
  },
  {
    command: 'reconcile run --all',
    run: async (env) => {
      const argv = ['--json', 'reconcile', 'run', '--all', '--consumer', K, '--out-dir', path('all')];
      await expectRuns([...argv, '--run-id', 'priv-1', '--keep-nights', '5'], env, [0, 1]);
      expect(await count(`SELECT COUNT(*) AS n FROM ${sh('fcctl_reconcile_ledger')}`)).toBeGreaterThan(0);
    },
  },
  {
    command: 'reconcile history',
    run: async (env) => void (await expectRuns(['--json', 'reconcile', 'history'], env, [0])),
  },
  {
    command: 'reconcile report',
    run: async (env) => {
      const argv = ['--json', 'reconcile', 'report', '--out-dir', path('all'), '--out', path('report.html')];
      await expectRuns(argv, env, [0]);
    },
  },
  {
    command: 'projection repair-authoritative',
    run: async (env) => {
      const plans = pairDirs()
        .map((d) => join(d, 'repair-plan.jsonl'))
        .filter(nonEmpty);
      writeFileSync(path('repair-plan.jsonl'), plans.map((p) => readFileSync(p, 'utf8')).join(''));
      expect(nonEmpty(path('repair-plan.jsonl'))).toBe(true);
      const argv = ['--json', 'projection', 'repair-authoritative', '--plan', path('repair-plan.jsonl')];
      await expectRuns([...argv, '--consumer', K, '--proof-id', 'priv-repair', '--execute'], env, [0, 1]);
      expect(await count(`SELECT COUNT(*) AS n FROM ${sh('fc_reconcile_audit')}`)).toBeGreaterThan(0);
    },
  },
  {
    command: 'retire-absent prove',
    run: async (env) => {
      const pair = pairDirs().find((d) => nonEmpty(join(d, 'retire-candidates.jsonl')));
      expect(pair, 'a pair with retire candidates').toBeDefined();
      const candidates = ['--candidates', join(pair!, 'retire-candidates.jsonl')];
      const argv = [
        '--json',
        'retire-absent',
        'prove',
        ...candidates,
        '--fc-manifest',
        join(pair!, 'fc-manifest.jsonl'),
      ];
      await expectRuns([...argv, '--out', path('proof.json')], env, [0, 1]);
    },
  },
  {
    command: 'retire-absent',
    run: async (env) => {
      const argv = ['--json', 'retire-absent', '--proof', path('proof.json'), '--execute'];
      await expectRuns([...argv, '--evidence', path('retire.jsonl')], env, [0, 1]);
    },
  },
  {
    command: 'apply-command scan',
    run: async (env) => void (await expectRuns(['--json', 'apply-command', 'scan'], env, [0])),
  },
  {
    command: 'apply-command resolve-unknown',
    run: async (env) => {
      const argv = ['--json', 'apply-command', 'resolve-unknown', '--request-timeout', '2', '--lease-seconds', '30'];
      await expectRuns(argv, env, [0, 1]);
      const done = `SELECT COUNT(*) AS n FROM ${sh('flow_apply_command')} WHERE biz_id LIKE '${w.bizPrefix}-u%' AND state = 'DONE'`;
      expect(await count(done)).toBe(3);
    },
  },
  {
    command: 'apply-command resolve-unknown --follow',
    run: async (env) => {
      const done = `SELECT COUNT(*) AS n FROM ${sh('flow_apply_command')} WHERE biz_id = '${w.bizPrefix}-f0' AND state = 'DONE'`;
      const argv = ['apply-command', 'resolve-unknown', '--request-timeout', '2', '--poll-interval', '0.2'];
      const gone = await plantGoneWorker('sh', 'apply-command resolve-unknown');
      await expectServes(argv, env, async () => (await count(done)) === 1 && (await count(gone)) === 0);
    },
  },
  {
    command: 'apply-command requeue',
    run: async (env) => {
      const argv = ['--json', 'apply-command', 'requeue', '--dead', '--operation-id', 'INC-PRIV-2', '--execute'];
      await expectRuns([...argv, '--evidence', path('requeue.jsonl')], env, [0, 1]);
      const back = `SELECT COUNT(*) AS n FROM ${sh('flow_apply_command')} WHERE biz_id LIKE '${w.bizPrefix}-d%' AND state = 'UNKNOWN'`;
      expect(await count(back)).toBe(2);
    },
  },
  {
    command: 'pause',
    run: async (env) => {
      for (const c of [
        ['deliveries', 'send'],
        ['apply-command', 'resolve-unknown'],
        ['reconcile', 'run'],
      ])
        await expectRuns(['--json', 'pause', ...c, '--reason', 'least privilege test', '--until', '1h'], env, [0]);
    },
  },
  {
    command: 'pause --list',
    run: async (env) => void (await expectRuns(['--json', 'pause', '--list'], env, [0])),
  },
  {
    command: 'resume',
    run: async (env) => {
      for (const c of [
        ['deliveries', 'send'],
        ['apply-command', 'resolve-unknown'],
        ['reconcile', 'run'],
      ])
        await expectRuns(['--json', 'resume', ...c], env, [0]);
    },
  },
  {
    command: 'explain',
    run: async (env) => {
      const [rows] = await w.admin.query(
        `SELECT answer_uuid AS a, event_id AS e FROM ${fc('answer_delivery')} WHERE consumer_app_key = '${K}' ORDER BY id LIMIT 1`,
      );
      const { a, e } = (rows as Array<{ a: string; e: string }>)[0]!;
      // a claimed row: explain looks its holder up in the fleet registry (fcctl_worker)
      await w.admin.query(
        `UPDATE ${fc('answer_delivery')} SET claim_owner = 'priv-host:4242:0abc', claim_expires_at = NOW() + INTERVAL 1 MINUTE WHERE event_id = ?`,
        [e],
      );
      await expectRuns(['--json', 'explain', 'answer', a, '--consumer', K, '--school', SCHOOL], env, [0, 1]);
      await expectRuns(['--json', 'explain', 'event', e], env, [0, 1]);
      const cmd = ['--biz-type', 'honor_apply', '--biz-id', `${w.bizPrefix}-u0`];
      await expectRuns(['--json', 'explain', 'command', ...cmd], env, [0, 1]);
    },
  },
  {
    command: 'config show',
    run: async (env) => void (await expectRuns(['--json', 'config', 'show'], env, [0])),
  },
  {
    command: 'canon',
    run: async (env) => void (await expectRuns(['canon', 'hash', '-'], env, [0], '{"a":[1,2.50,"x"]}')),
  },
];

/** svc-hall's queue and its .dlq, bound to each consumer's keys, as `doctor --isolation` expects them. */
async function consumerQueues(broker: HardenedBroker): Promise<void> {
  const conn = await amqp.connect(broker.adminUrl);
  const ch = await conn.createChannel();
  await ch.assertQueue(CONSUMER_QUEUE, { durable: true });
  await ch.assertQueue(`${CONSUMER_QUEUE}.dlq`, { durable: true });
  for (const key of CONSUMERS) await ch.bindQueue(CONSUMER_QUEUE, EXCHANGE, `fc.snapshot.v2.${key}.*`);
  await conn.close();
}

test.beforeAll(async ({ dbs, tmp, flowCenter }) => {
  const admin = dbs.env({ FCCTL_APP_KEY: APP.key, FCCTL_APP_CODE: 'demo-publisher' });
  const init = await spawnCli(['db', 'init', '--side', 'all', '--dev'], { env: admin });
  expect(init.code, init.stderr).toBe(0);
  const seed = ['--json', 'dev', 'seed', '--answers', '60', '--schools', '1', '--consumer-keys', CONSUMERS.join(',')];
  const seeded = await spawnCli(seed, { env: admin });
  expect(seeded.code, seeded.stderr).toBe(0);
  const broker = await hardenedBroker('^$');
  // the publisher holds exactly what the page's sh block gives it
  const perms = brokerPermissions();
  await mqCtl('set_permissions', '-p', broker.vhost, broker.publisher.name, ...perms.permissions);
  await mqCtl('set_topic_permissions', '-p', broker.vhost, broker.publisher.name, ...perms.topic);
  await consumerQueues(broker);
  const [forms] = await dbs.admin.query(
    `SELECT form_uuid AS f FROM \`${dbs.fcName}\`.answer WHERE sch_id = ${SCHOOL} GROUP BY form_uuid ORDER BY COUNT(*) DESC LIMIT 1`,
  );
  // apply commands: three UNKNOWN the stand-in holds (resolve-unknown settles them), one for the
  // --follow run, two DEAD for requeue
  const bizPrefix = uniquePrefix('priv');
  const unknown = ['u0', 'u1', 'u2', 'f0'].map((n) => `${bizPrefix}-${n}`);
  await insertCommands(dbs.admin, dbs.shName, [
    ...unknown.slice(0, 3).map((bizId) => ({ bizId, state: 'UNKNOWN' as const })),
    ...['d0', 'd1'].map((n) => ({ bizId: `${bizPrefix}-${n}`, state: 'DEAD' as const })),
  ]);
  await flowCenter.addInstances(unknown.map((bizId) => ownedInstance(bizId, 30, { instanceId: `FI-${bizId}` })));
  w = {
    fcName: dbs.fcName,
    shName: dbs.shName,
    tmp,
    broker,
    flowUrl: flowCenter.url,
    admin: dbs.admin,
    form: (forms as Array<{ f: string }>)[0]!.f,
    bizPrefix,
  };
});
test.afterAll(async () => {
  await w?.broker.drop();
});

describe('least privilege: each command runs under exactly the grants docs/privileges.md names', () => {
  test('the page and the cases name the same commands (a block without a case, or a case without a block, fails)', () => {
    expect(PAGE.map((p) => p.command).sort()).toEqual([...CASES.map((c) => c.command), 'db init'].sort());
  });

  test('db init: creates both schemas on empty databases, and upgrades an older one, with its CREATE/ALTER/INDEX grants', async () => {
    const empty = await freshDatabases('privinit');
    try {
      const { env, drop } = await userWith(grantsOf('db init'), { fc: empty.fcName, sh: empty.shName });
      try {
        await expectRuns(['--json', 'db', 'init', '--side', 'all'], env, [0]);
        // an upgrade: a schema version 6 database (no ledger table, no status index, no registry
        // `detail`) gets all three
        await empty.admin.query(
          `DROP TABLE \`${empty.shName}\`.fcctl_reconcile_ledger; ALTER TABLE \`${empty.fcName}\`.answer_delivery DROP KEY idx_delivery_state_time; ` +
            `ALTER TABLE \`${empty.fcName}\`.fcctl_worker DROP COLUMN detail; ALTER TABLE \`${empty.shName}\`.fcctl_worker DROP COLUMN detail; ` +
            `UPDATE \`${empty.fcName}\`.fcctl_schema_version SET version = 6; UPDATE \`${empty.shName}\`.fcctl_schema_version SET version = 6`,
        );
        const upgrade = await expectRuns(['--json', 'db', 'init', '--side', 'all'], env, [0]);
        expect(upgrade.stdout, upgrade.stdout).toContain('answer_delivery.idx_delivery_state_time');
        expect(upgrade.stdout).toContain('fcctl_reconcile_ledger');
        expect(upgrade.stdout.match(/fcctl_worker\.detail/g), upgrade.stdout).toHaveLength(2);
      } finally {
        await drop();
      }
      const check = await spawnCli(['db', 'check'], { env: empty.env() });
      expect(check.code, check.stderr).toBe(0);
    } finally {
      await empty.drop();
    }
  });

  test('db init as a user that cannot see the tables it creates (no REFERENCES): exit 3 naming the grant, no version recorded', async () => {
    const empty = await freshDatabases('privinit');
    try {
      const init = grantsOf('db init');
      const blind = { command: 'db init', grants: init.grants.map((g) => g.replace(', REFERENCES ON', ' ON')) };
      expect(blind.grants).not.toEqual(init.grants);
      const { env, drop } = await userWith(blind, { fc: empty.fcName, sh: empty.shName });
      try {
        const r = await spawnCli(['db', 'init', '--side', 'fc'], { env });
        expect(r.code, r.stderr).toBe(3);
        expect(r.stderr).toMatch(/information_schema does not show them to this user: grant it REFERENCES/);
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
      } finally {
        await drop();
      }
      const [rows] = await empty.admin.query(`SELECT COUNT(*) AS n FROM \`${empty.fcName}\`.fcctl_schema_version`);
      expect(Number((rows as Array<{ n: number }>)[0]!.n)).toBe(0);
    } finally {
      await empty.drop();
    }
  });

  for (const c of CASES) {
    test(`${c.command}`, async () => {
      // the apply commands the --follow case settles are inserted only now, so the batch run leaves them
      if (c.command === 'apply-command resolve-unknown --follow')
        await insertCommands(w.admin, w.shName, [{ bizId: `${w.bizPrefix}-f0`, state: 'UNKNOWN' }]);
      const { env, drop } = await userWith(grantsOf(c.command));
      try {
        await c.run(env);
      } finally {
        await drop();
      }
    });
  }
});

describe('doctor: a user holding far more than fcctl needs is warned about, never failed', () => {
  test("the test server's own user (ALL PRIVILEGES ON *.* WITH GRANT OPTION): a warn line per database, exit 0", async ({
    dbs,
  }) => {
    const r = await expectRuns(['--json', 'doctor'], envWith(dbs.fcUrl, dbs.shUrl), [0]);
    for (const side of ['FC', 'SH']) {
      const line = checksOf(r.stdout)[`${side} database privileges`];
      expect(line?.['status'], r.stdout).toBe('warn');
      expect(String(line?.['detail'])).toContain('global ALL PRIVILEGES');
      expect(String(line?.['detail'])).toContain('GRANT OPTION on *.*');
    }
  });

  test("doctor's own grants plus DELETE on the whole SH database: warned, naming it", async () => {
    const doctor = grantsOf('doctor');
    const { env, drop } = await userWith({
      command: 'doctor',
      grants: [...doctor.grants, 'GRANT DELETE ON {sh}.* TO {user}'],
    });
    try {
      const r = await expectRuns(['--json', 'doctor'], env, [0]);
      const line = checksOf(r.stdout)['SH database privileges'];
      expect(line?.['status'], r.stdout).toBe('warn');
      expect(String(line?.['detail'])).toContain(`DELETE on every table of ${w.shName}`);
    } finally {
      await drop();
    }
  });

  test("doctor's own grants plus a role holding ALL PRIVILEGES, not active (the user can SET ROLE it): warned, naming it", async () => {
    const { env, drop } = await userWith(grantsOf('doctor'));
    const role = `fcctl_priv_role_${randomBytes(4).toString('hex')}`;
    const account = `'${new URL(env['FCCTL_FC_DATABASE_URL']!).username}'@'%'`;
    try {
      await w.admin.query(`CREATE ROLE ${role}`);
      await w.admin.query(`GRANT ALL PRIVILEGES ON *.* TO ${role}`);
      await w.admin.query(`GRANT ${role} TO ${account}`);
      const r = await expectRuns(['--json', 'doctor'], env, [0]);
      for (const side of ['FC', 'SH']) {
        const line = checksOf(r.stdout)[`${side} database privileges`];
        expect(line?.['status'], r.stdout).toBe('warn');
        expect(String(line?.['detail'])).toContain(`role ${role}, whose privileges SHOW GRANTS does not list`);
      }
    } finally {
      await drop();
      await w.admin.query(`DROP ROLE IF EXISTS ${role}`);
    }
  });

  test("doctor's own grants plus CREATE, ALTER on `%`.* (every database, fcctl's among them): warned, naming it", async () => {
    const doctor = grantsOf('doctor');
    const { env, drop } = await userWith({
      command: 'doctor',
      grants: [...doctor.grants, 'GRANT CREATE, ALTER ON `%`.* TO {user}'],
    });
    try {
      const r = await expectRuns(['--json', 'doctor'], env, [0]);
      for (const side of ['FC', 'SH']) {
        const line = checksOf(r.stdout)[`${side} database privileges`];
        expect(line?.['status'], r.stdout).toBe('warn');
        expect(String(line?.['detail'])).toContain('CREATE, ALTER on every database matching %');
      }
    } finally {
      await drop();
    }
  });
});
