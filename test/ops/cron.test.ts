import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import amqp from 'amqplib';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PUBLISHER, defaultConsumerKeys } from '../../src/lib/dev/seed.js';
import { jsonLines } from '../helpers/cli.js';
import { seedDevDatabases } from '../helpers/dev-seed.js';
import { servicesTest } from '../helpers/services.js';
import { collectTextfiles, readProm } from '../helpers/textfile.js';
import { freshVhost } from '../helpers/vhost.js';
import { cronCommand, documentedEnvExample, parseCrontab, substitutePaths } from './crontab.js';

const CRONTAB = fileURLToPath(new URL('../../docs/cron/fcctl.crontab', import.meta.url));
const PROJECT_BIN = fileURLToPath(new URL('../../bin', import.meta.url));
const SECRET = 'cron-test-secret';
const CONSUMERS = defaultConsumerKeys(3, DEFAULT_PUBLISHER.appKey);
const test = servicesTest({ prefix: 'cron', flowApps: { [DEFAULT_PUBLISHER.appKey]: SECRET } });

describe('crontab reading (crontab(5))', () => {
  it.each([
    ['fcctl x', 'fcctl x', ''],
    ['date +\\%F', 'date +%F', ''],
    ['cat%a%b', 'cat', 'a\nb'],
    ['echo \\%%x', 'echo %', 'x'],
  ])('%s → command %s, stdin %j', (text, command, stdin) => {
    expect(cronCommand(text)).toEqual({ command, stdin });
  });
  it('settings, comments and jobs', () => {
    const t = parseCrontab('# c\nSHELL=/bin/bash\nA="x y"\n\n*/5 * * * * echo hi\n30 2 * * *  run \\%F\n');
    expect(t.env).toEqual({ SHELL: '/bin/bash', A: 'x y' });
    expect(t.jobs.map((j) => [j.schedule, j.command])).toEqual([
      ['*/5 * * * *', 'echo hi'],
      ['30 2 * * *', 'run %F'],
    ]);
  });
});

/** Runs a command as cron does: `$SHELL -c command` with only cron's and the crontab's variables. */
function asCron(
  command: string,
  env: Record<string, string>,
  stdin: string,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const vars = Object.entries(env).map(([k, v]) => `${k}=${v}`);
    // stdin not a socket (node's default pipes are): bash would take itself for an sshd child
    // and read ~/.bashrc, which cron's shell never does
    const child = spawn('env', ['-i', ...vars, env['SHELL'] ?? '/bin/sh', '-c', command], {
      stdio: [stdin === '' ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
    child.stdin?.end(stdin);
  });
}

describe('docs/cron/fcctl.crontab, line by line under env -i against the local services', () => {
  test('every job exits 0, logs JSON lines with ts and writes its metrics file; no series in two files', async ({
    dbs,
    tmp,
    flowCenter,
  }) => {
    const vhost = freshVhost();
    try {
      const amqpUrl = vhost.url;
      await seedDevDatabases(dbs.env(), 7, 60, 2);
      await bindConsumers(amqpUrl, CONSUMERS);
      const text = readFileSync(CRONTAB, 'utf8');
      const dirs = {
        etc: join(tmp, 'etc'),
        prom: join(tmp, 'prom'),
        log: join(tmp, 'log'),
        lock: join(tmp, 'lock'),
        state: join(tmp, 'state'),
      };
      for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
      const envFile = writeEnvFile(text, dirs.etc, {
        fc: dbs.fcUrl,
        sh: dbs.shUrl,
        amqp: amqpUrl,
        flow: flowCenter.url,
      });
      const paths = {
        '/etc/fcctl/env': envFile,
        '/etc/fcctl': dirs.etc,
        '/var/lib/node_exporter/textfile_collector': dirs.prom,
        '/var/log/fcctl': dirs.log,
        '/run/lock': dirs.lock,
        '/var/lib/fcctl': dirs.state,
      };
      const tab = parseCrontab(substitutePaths(text, paths));
      expect(tab.env['SHELL']).toBe('/bin/bash');
      // cron's own variables, the crontab's (PATH with the project's bin/ in front: the `fcctl` it runs)
      const cronEnv = {
        HOME: tmp,
        LOGNAME: 'fcctl',
        ...tab.env,
        PATH: `${PROJECT_BIN}:${tab.env['PATH'] ?? '/usr/bin:/bin'}`,
      };
      expect(tab.jobs.length).toBe(4);
      for (const job of tab.jobs) {
        expect(job.stdin, job.line).toBe('');
        expect(job.command).toContain('set -a && . ');
        const r = await asCron(job.command, cronEnv, job.stdin);
        expect(r.code, `${job.line}\n${r.out}`).toBe(0);
        expect(r.out, job.line).toBe('');
      }
      for (const log of ['send.jsonl', 'apply.jsonl', 'reconcile.jsonl']) {
        const lines = jsonLines(readFileSync(join(dirs.log, log), 'utf8'));
        expect(lines.length, log).toBeGreaterThan(0);
        for (const l of lines) expect(l['ts'], log).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$/);
        expect(lines.at(-1), log).toMatchObject({ type: 'summary', exitCode: 0 });
      }
      expect(readFileSync(join(dirs.log, 'scan.err'), 'utf8')).toBe('');
      const send = jsonLines(readFileSync(join(dirs.log, 'send.jsonl'), 'utf8')).at(-1)!;
      expect(send['accepted']).toBeGreaterThan(0);
      const proms = readdirSync(dirs.prom)
        .filter((f) => f.endsWith('.prom'))
        .sort();
      expect(proms).toEqual(['fcctl_apply.prom', 'fcctl_reconcile.prom', 'fcctl_scan.prom', 'fcctl_send.prom']);
      for (const f of proms) expect(readProm(join(dirs.prom, f)), f).toMatch(/^fcctl_run_exit_code\{[^}]*\} 0$/m);
      // the directory as node_exporter's textfile collector reads it: no series in two files, no parse error
      expect(collectTextfiles(dirs.prom).errors).toEqual([]);
      // the reconcile line: every pair of both schools, each in the stable output directory
      const night = jsonLines(readFileSync(join(dirs.log, 'reconcile.jsonl'), 'utf8')).at(-1)!;
      expect(night).toMatchObject({ all: true, byResult: { failed: 0 } });
      expect(night['pairsRun']).toBe(night['pairsFound']);
      expect(Number(night['pairsFound'])).toBeGreaterThanOrEqual(2);
      expect(existsSync(join(dirs.state, 'reconcile', 'summary.json'))).toBe(true);
      expect(
        readdirSync(join(dirs.state, 'reconcile'))
          .filter((d) => /^\d+$/.test(d))
          .sort(),
      ).toEqual(['5', '6']);
      // one metrics file holding every pair's series, each labelled with its school and form
      const rows = collectTextfiles(dirs.prom).families.get('fcctl_reconcile_rows')?.samples ?? [];
      expect(new Set(rows.map((r) => r.file))).toEqual(new Set(['fcctl_reconcile.prom']));
      expect(new Set(rows.map((r) => `${r.labels['school']} ${r.labels['form']}`)).size).toBe(night['pairsFound']);
      // started again within 30 min of the run's last activity (a late pod, a retry by hand): it joins
      // the same run, runs nothing twice, and exits with that run's verdict (issue 26 §3)
      const nightly = tab.jobs.find((j) => j.command.includes('reconcile run --all'))!;
      expect((await asCron(nightly.command, cronEnv, '')).code).toBe(0);
      const log = readFileSync(join(dirs.log, 'reconcile.jsonl'), 'utf8');
      const again = JSON.parse(log.trim().split('\n').at(-1)!) as Record<string, unknown>;
      expect(again).toMatchObject({ type: 'summary', runId: night['runId'], pairsRun: 0, exitCode: 0 });
      expect(log).not.toContain('nothing was run');
    } finally {
      vhost.drop();
    }
  }, 120_000);

  test('the old `. /etc/fcctl/env` (no set -a) leaves fcctl without its settings: exit 2, named', async ({ tmp }) => {
    const env = join(tmp, 'plain.env');
    writeFileSync(env, 'FCCTL_FC_DATABASE_URL=mysql://u:p@127.0.0.1:1/x\n');
    const r = await asCron(
      `. ${env} && fcctl deliveries scan`,
      { SHELL: '/bin/bash', HOME: tmp, PATH: `${PROJECT_BIN}:/usr/bin:/bin` },
      '',
    );
    expect(r.code).toBe(2);
    expect(r.out).toContain('FCCTL_FC_DATABASE_URL');
    const exported = await asCron(
      `set -a && . ${env} && set +a && printenv FCCTL_FC_DATABASE_URL`,
      { SHELL: '/bin/bash', HOME: tmp, PATH: '/usr/bin:/bin' },
      '',
    );
    expect(exported.out.trim()).toBe('mysql://u:p@127.0.0.1:1/x');
  });
});

/**
 * The environment file in the format the crontab documents: its example's keys, with this test's
 * services as values; `*_FILE` keys name files holding the value (mode 0400).
 */
function writeEnvFile(crontab: string, dir: string, s: { fc: string; sh: string; amqp: string; flow: string }): string {
  const values: Record<string, string> = {
    FCCTL_FC_DATABASE_URL: s.fc,
    FCCTL_SH_DATABASE_URL: s.sh,
    FCCTL_AMQP_URL: s.amqp,
    FCCTL_FLOW_URL: s.flow,
    FCCTL_APP_KEY: DEFAULT_PUBLISHER.appKey,
    FCCTL_APP_CODE: DEFAULT_PUBLISHER.appCode,
    FCCTL_APP_SECRET: SECRET,
    FCCTL_SERVICE_TIME_ZONE: 'UTC',
  };
  const lines = ['# written by test/ops/cron.test.ts in the format docs/cron/fcctl.crontab states'];
  for (const [key] of documentedEnvExample(crontab)) {
    const base = key.replace(/_FILE$/, '');
    const value = values[base];
    if (value === undefined) throw new Error(`the documented example names ${key}, which this test has no value for`);
    if (key === base) {
      lines.push(`${key}=${value}`);
    } else {
      const file = join(dir, base.toLowerCase());
      writeFileSync(file, `${value}\n`, { mode: 0o400 });
      lines.push(`${key}=${file}`);
    }
  }
  const path = join(dir, 'env');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/** The consumers' side: the delivery exchange and one queue per seeded consumer key (no NO_ROUTE). */
async function bindConsumers(url: string, keys: readonly string[]): Promise<void> {
  const conn = await amqp.connect(url);
  const ch = await conn.createChannel();
  await ch.assertExchange('fc.answer.delivery.v2', 'topic', { durable: true });
  for (const key of keys) {
    await ch.assertQueue(`cron.consumer.${key}`, { durable: false, autoDelete: false });
    await ch.bindQueue(`cron.consumer.${key}`, 'fc.answer.delivery.v2', `fc.snapshot.v2.${key}.*`);
  }
  await conn.close();
}
