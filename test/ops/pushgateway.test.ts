import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { seedDevDatabases } from '../helpers/dev-seed.js';
import { servicesTest } from '../helpers/services.js';

// Issue 36 §17: the Kubernetes CronJobs' metrics reach Prometheus through a Pushgateway
// (docs/kubernetes/pushgateway.yaml). Each CronJob's push sidecar script, as the manifest has it,
// is run here against a real Pushgateway (Debian's prometheus-pushgateway, loopback) with a file a
// real fcctl wrote, and stopped as the kubelet stops a native sidecar once fcctl has exited
// (SIGTERM).

const DIR = fileURLToPath(new URL('../../docs/kubernetes/', import.meta.url));
const FCCTL = fileURLToPath(new URL('../../bin/fcctl', import.meta.url));
const PUSHGATEWAY = '/usr/bin/prometheus-pushgateway';
/** This test's port (the deploy helper's private range). */
const PORT = 25020;
const URL_BASE = `http://127.0.0.1:${PORT}`;
const test = servicesTest({ prefix: 'pushgw' });

type Obj = Record<string, any>;
/** The push sidecar of a CronJob manifest: its script and its environment. */
function sidecar(file: string): { script: string; env: Record<string, string> } {
  const docs = parseAllDocuments(readFileSync(join(DIR, file), 'utf8'), { version: '1.1' }).map((d) => d.toJS() as Obj);
  const pod = docs.find((d) => d.kind === 'CronJob')!.spec.jobTemplate.spec.template.spec;
  const push = pod.initContainers.find((c: Obj) => c.restartPolicy === 'Always');
  expect(push.command).toEqual(['/bin/sh', '-c']);
  return { script: push.args[0], env: Object.fromEntries(push.env.map((e: Obj) => [e.name, e.value])) };
}

/** The init container that fetches the pod's group back before fcctl starts (its script and environment), or null. */
function fetcher(file: string): { script: string; env: Record<string, string> } | null {
  const docs = parseAllDocuments(readFileSync(join(DIR, file), 'utf8'), { version: '1.1' }).map((d) => d.toJS() as Obj);
  const pod = docs.find((d) => d.kind === 'CronJob')!.spec.jobTemplate.spec.template.spec;
  const fetch = pod.initContainers.find((c: Obj) => c.name === 'fetch-metrics');
  if (!fetch) return null;
  expect(fetch.restartPolicy).toBeUndefined();
  expect(fetch.command).toEqual(['/bin/sh', '-c']);
  return { script: fetch.args[0], env: Object.fromEntries(fetch.env.map((e: Obj) => [e.name, e.value])) };
}

/** Runs a sidecar script until it waits, then stops it with SIGTERM: its exit code and output. */
async function runSidecar(script: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn('sh', ['-c', script], { env: { PATH: '/usr/bin:/bin', ...env }, detached: true });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  // waiting: its sleep started (as the kubelet stops it only once fcctl has exited, seconds later)
  for (let i = 0; i < 100 && spawnSync('pgrep', ['-P', String(child.pid), 'sleep']).status !== 0; i++)
    await new Promise((r) => setTimeout(r, 50));
  // it waits for fcctl's end, pushing nothing before
  expect(child.exitCode).toBeNull();
  child.kill('SIGTERM');
  const code = await closed;
  // its background sleep is gone with it (killed by the trap): nothing left in its process group
  let left = spawnSync('pgrep', ['-g', String(child.pid)], { encoding: 'utf8' });
  for (let i = 0; i < 20 && left.status === 0; i++) {
    await new Promise((r) => setTimeout(r, 50));
    left = spawnSync('pgrep', ['-g', String(child.pid)], { encoding: 'utf8' });
  }
  expect(left.status, `a process of the sidecar was left running: ${left.stdout}`).toBe(1);
  return { code, out };
}

/**
 * The Pushgateway's /metrics: the series pushed as `job` (its own push_time_seconds left out, after
 * checking that the last push of the group did not fail).
 */
async function pushed(job: string): Promise<string[]> {
  const text = await (await fetch(`${URL_BASE}/metrics`)).text();
  const lines = text.split('\n').filter((l) => l.includes(`job="${job}"`) && !l.startsWith('#'));
  const failure = lines.filter((l) => l.startsWith('push_failure_time_seconds{'));
  expect(failure.length, `${job}: one group`).toBe(1);
  expect(failure[0], `${job}: the push was refused`).toMatch(/ 0$/);
  return lines.filter((l) => !l.startsWith('push_'));
}

/** The series of one group (`job="fcctl-reconcile"`, its `instance`), the Pushgateway's own left out. */
async function group(instance: string): Promise<string[]> {
  const text = await (await fetch(`${URL_BASE}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.includes('job="fcctl-reconcile"') && l.includes(`instance="${instance}"`) && !l.startsWith('#'))
    .filter((l) => !l.startsWith('push_'));
}

/** `reconcile run --all` as one pod of the Indexed Job: its own host name (`<job>-<index>`), its own new metrics emptyDir. */
function reconcilePod(
  host: string,
  dir: string,
  extra: readonly string[],
  env: Record<string, string>,
): { status: number | null; stderr: string; summary: Record<string, unknown>; file: string } {
  mkdirSync(join(dir, host));
  const file = join(dir, host, 'fcctl_reconcile.prom');
  const argv = [
    ...['reconcile', 'run', '--all', '--consumer', '100100', '--out-dir', join(dir, host, 'out')],
    ...['--metrics-file', file, '--json', ...extra],
  ];
  const r = spawnSync(
    'unshare',
    ['-u', 'sh', '-c', 'hostname "$0" && exec "$@"', host, process.execPath, FCCTL, ...argv],
    {
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin', ...env },
    },
  );
  const summary = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l['type'] === 'summary');
  return { status: r.status, stderr: r.stderr, summary: summary ?? {}, file };
}

let seeded: Promise<unknown> | undefined;
/** The file's databases seeded once (the tests share them). */
function seedOnce(env: Parameters<typeof seedDevDatabases>[0]): Promise<unknown> {
  seeded ??= seedDevDatabases(env, 7, 60, 2);
  return seeded;
}

let gateway: ChildProcess | undefined;
beforeAll(async () => {
  expect(existsSync(PUSHGATEWAY), `${PUSHGATEWAY} is missing: run \`bash scripts/services.sh up\``).toBe(true);
  // in memory only: Debian's build persists to /var/lib/prometheus/pushgateway.data by default, and
  // the groups of an earlier run (another night's indexes) would be back here
  gateway = spawn(PUSHGATEWAY, [`--web.listen-address=127.0.0.1:${PORT}`, '--persistence.file='], {
    stdio: 'ignore',
  });
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`${URL_BASE}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the Pushgateway did not become ready');
});
afterAll(() => {
  gateway?.kill('SIGTERM');
});

describe('docs/kubernetes: the CronJobs push their metrics files to a Pushgateway', () => {
  test("deliveries scan's file, as fcctl wrote it, is accepted whole under job/instance fcctl-deliveries-scan", async ({
    dbs,
    tmp,
  }) => {
    const { script, env } = sidecar('deliveries-scan-cronjob.yaml');
    await seedOnce(dbs.env());
    mkdirSync(join(tmp, 'scan'));
    const file = join(tmp, 'scan', 'fcctl_scan.prom');
    // the scan pod's only setting: the FC database
    const scan = spawnSync(process.execPath, [FCCTL, 'deliveries', 'scan', '--metrics-file', file, '--json'], {
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin', FCCTL_FC_DATABASE_URL: dbs.fcUrl },
    });
    expect(scan.status, scan.stderr).toBe(0);
    const r = await runSidecar(script, { ...env, METRICS_FILE: file, PUSHGATEWAY_URL: URL_BASE });
    expect(r).toEqual({ code: 0, out: '' });
    const lines = await pushed('fcctl-deliveries-scan');
    // every series of the file, each labelled with the group
    const series = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('#'));
    expect(series.length).toBeGreaterThan(3);
    expect(lines.length).toBe(series.length);
    expect(lines.every((l) => l.includes('instance="fcctl-deliveries-scan"'))).toBe(true);
    expect(lines.some((l) => /^fcctl_last_success_timestamp_seconds\{.*command="deliveries scan"/.test(l))).toBe(true);
    expect(lines.some((l) => /^fcctl_deliveries_dead\{/.test(l))).toBe(true);
    // a pod that wrote no file (killed first) pushes nothing: the group stays as it was
    const none = await runSidecar(script, {
      ...env,
      METRICS_FILE: join(tmp, 'scan', 'missing.prom'),
      PUSHGATEWAY_URL: URL_BASE,
    });
    expect(none).toEqual({ code: 0, out: '' });
    expect(await pushed('fcctl-deliveries-scan')).toEqual(lines);
  }, 60_000);

  test("a reconcile pod's file goes to the group of its index; the next night's pod of that index replaces it", async ({
    dbs,
    tmp,
  }) => {
    const { script, env } = sidecar('reconcile-cronjob.yaml');
    await seedOnce(dbs.env());
    mkdirSync(join(tmp, 'reconcile'));
    const file = join(tmp, 'reconcile', 'fcctl_reconcile.prom');
    const night = spawnSync(
      process.execPath,
      [
        FCCTL,
        'reconcile',
        'run',
        '--all',
        '--consumer',
        '100100',
        '--out-dir',
        join(tmp, 'reconcile', 'out'),
        '--metrics-file',
        file,
        '--json',
      ],
      {
        encoding: 'utf8',
        env: { PATH: '/usr/bin:/bin', FCCTL_FC_DATABASE_URL: dbs.fcUrl, FCCTL_SH_DATABASE_URL: dbs.shUrl },
      },
    );
    expect(night.status, night.stderr).toBe(0);
    const r = await runSidecar(script, {
      ...env,
      METRICS_FILE: file,
      PUSHGATEWAY_URL: URL_BASE,
      JOB_COMPLETION_INDEX: '2',
    });
    expect(r).toEqual({ code: 0, out: '' });
    const lines = await pushed('fcctl-reconcile');
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((l) => l.includes('instance="fcctl-reconcile-2"'))).toBe(true);
    expect(lines.some((l) => /^fcctl_reconcile_differences\{.*school="\d+"/.test(l))).toBe(true);
    // the next night, the same index with a file of fewer series: the group holds only those (PUT)
    const kept = readFileSync(file, 'utf8')
      .split('\n')
      .filter(
        (l) =>
          !l.startsWith('fcctl_reconcile_') &&
          !l.startsWith('# HELP fcctl_reconcile_') &&
          !l.startsWith('# TYPE fcctl_reconcile_'),
      );
    const next = join(tmp, 'reconcile', 'next.prom');
    writeFileSync(next, kept.join('\n'));
    const again = await runSidecar(script, {
      ...env,
      METRICS_FILE: next,
      PUSHGATEWAY_URL: URL_BASE,
      JOB_COMPLETION_INDEX: '2',
    });
    expect(again).toEqual({ code: 0, out: '' });
    const after = await pushed('fcctl-reconcile');
    expect(after.some((l) => l.startsWith('fcctl_reconcile_'))).toBe(false);
    expect(after.length).toBeGreaterThan(0);
  }, 120_000);
  // Review of issue 36 §17: a late pod of the Indexed Job (scheduled after the others finished) joins
  // the night's run complete and runs nothing. It used to write no metrics file, so its sidecar
  // pushed nothing and its index's group kept an EARLIER night's pair gauges as if they were
  // tonight's — FcctlReconcileDifferences kept firing for a pair fixed since and found in sync
  // tonight by another pod (src/lib/reconcile/metrics.ts carries no pair gauge of an old night
  // for exactly that reason).
  test("a pod that joins the night's run complete replaces its index's group: no earlier night's differences stay", async ({
    dbs,
    tmp,
  }) => {
    const { script, env } = sidecar('reconcile-cronjob.yaml');
    await seedOnce(dbs.env());
    const dir = join(tmp, 'nights');
    mkdirSync(dir);
    const dbEnv = { FCCTL_FC_DATABASE_URL: dbs.fcUrl, FCCTL_SH_DATABASE_URL: dbs.shUrl };
    const push = async (file: string, index: string) =>
      expect(
        await runSidecar(script, {
          ...env,
          METRICS_FILE: file,
          PUSHGATEWAY_URL: URL_BASE,
          JOB_COMPLETION_INDEX: index,
        }),
      ).toEqual({ code: 0, out: '' });

    // night 1: the pod of index 1 runs every pair (a run id no later process joins) and pushes
    const night1 = reconcilePod('fcctl-reconcile-night1-1', dir, ['--run-id', 'review-night-1'], dbEnv);
    expect(night1.status, night1.stderr).toBe(0);
    await push(night1.file, '1');
    // a pair's differences as the Pushgateway shows them (its labels in alphabetical order)
    const diffs = (lines: string[]) =>
      lines.flatMap((l) => {
        const m = /^fcctl_reconcile_differences\{([^}]*)\} (\d+)$/.exec(l);
        const label = (name: string) => new RegExp(`(?:^|,)${name}="([^"]*)"`).exec(m?.[1] ?? '')?.[1];
        return m ? [{ school: label('school')!, form: label('form')!, value: Number(m[2]) }] : [];
      });
    const fixed = diffs(await group('fcctl-reconcile-1')).find((d) => d.value > 0)!;
    expect(fixed, 'night 1 found differences').toBeDefined();

    // the day: the pair is fixed — every row its report lists as not in sync is gone on both sides
    const csv = readFileSync(
      join(dir, 'fcctl-reconcile-night1-1', 'out', fixed.school, fixed.form, 'report.csv'),
      'utf8',
    );
    const uuids = csv
      .split('\n')
      .slice(1)
      .filter((l) => l !== '')
      .map((l) => l.split(',')[1]!);
    expect(uuids.length).toBe(fixed.value + (csv.match(/^(ABSENT_CREATED_AFTER_TASK_START|RETIRED),/gm)?.length ?? 0));
    for (const [url, sql] of [
      [dbs.fcUrl, 'DELETE FROM answer WHERE answer_uuid IN (?)'],
      [dbs.shUrl, 'DELETE FROM fc_answer_projection WHERE answer_uuid IN (?)'],
    ] as const) {
      const c = await mysql.createConnection(url);
      await c.query(sql, [uuids]);
      await c.end();
    }

    // night 2: the pod of index 0 begins the night's run (a default-named id, as the night's first
    // process names it) and runs every pair: the fixed one in sync
    const night2 = reconcilePod('fcctl-reconcile-night2-0', dir, ['--run-id', '2099-12-31T18-30Z'], dbEnv);
    expect(night2.status, night2.stderr).toBe(0);
    await push(night2.file, '0');
    const tonight = diffs(await group('fcctl-reconcile-0'));
    expect(tonight.find((d) => d.school === fixed.school && d.form === fixed.form)?.value).toBe(0);
    // the pod of index 1 starts late: it joins that run, complete, and runs nothing
    const late = reconcilePod('fcctl-reconcile-night2-1', dir, [], dbEnv);
    expect(late.status, late.stderr).toBe(0);
    expect(late.summary).toMatchObject({ runId: '2099-12-31T18-30Z', joined: true, pairsRun: 0 });
    await push(late.file, '1');

    // no group says the fixed pair still differs (FcctlReconcileDifferences: fcctl_reconcile_differences > 0)
    const stale = diffs([...(await group('fcctl-reconcile-0')), ...(await group('fcctl-reconcile-1'))]).filter(
      (d) => d.school === fixed.school && d.form === fixed.form && d.value > 0,
    );
    expect(stale).toEqual([]);
    // index 1's group is tonight's: no pair of its own, the run it joined ended clean
    const late1 = await group('fcctl-reconcile-1');
    expect(late1.filter((l) => l.startsWith('fcctl_reconcile_'))).toEqual([]);
    expect(late1.some((l) => /^fcctl_run_exit_code\{.*command="reconcile run".*\} 0$/.test(l))).toBe(true);
    expect(readdirSync(join(dir, 'fcctl-reconcile-night2-1'))).toContain('fcctl_reconcile.prom');
  }, 180_000);
  // Review of issue 36 §17: every pod's metrics file is new, so a failed scan's file has no last
  // success time to keep, and its push (PUT) used to remove the group's: FcctlDeliveriesScanStale
  // (time() - fcctl_last_success_timestamp_seconds > 300) then had no series and never fired,
  // however long every scan failed. The pod now starts from its group as the Pushgateway holds it.
  test('a scan that fails keeps the last success time of the one before, and the runs add up (the stale alert can fire)', async ({
    dbs,
    tmp,
  }) => {
    const { script, env } = sidecar('deliveries-scan-cronjob.yaml');
    const fetch = fetcher('deliveries-scan-cronjob.yaml');
    await seedOnce(dbs.env());
    // a pod: the fetch init container (when the manifest has one), fcctl, then the push sidecar
    const pod = async (name: string, fcUrl: string) => {
      mkdirSync(join(tmp, name));
      const file = join(tmp, name, 'fcctl_scan.prom');
      if (fetch !== null) {
        const f = spawnSync('sh', ['-c', fetch.script], {
          encoding: 'utf8',
          env: { PATH: '/usr/bin:/bin', ...fetch.env, METRICS_FILE: file, PUSHGATEWAY_URL: URL_BASE },
        });
        expect(f.status, f.stderr).toBe(0);
      }
      const scan = spawnSync(process.execPath, [FCCTL, 'deliveries', 'scan', '--metrics-file', file, '--json'], {
        encoding: 'utf8',
        env: { PATH: '/usr/bin:/bin', FCCTL_FC_DATABASE_URL: fcUrl },
      });
      expect(await runSidecar(script, { ...env, METRICS_FILE: file, PUSHGATEWAY_URL: URL_BASE })).toEqual({
        code: 0,
        out: '',
      });
      return scan.status;
    };
    const success = /^fcctl_last_success_timestamp_seconds\{.*command="deliveries scan".*\} (\S+)$/;
    const value = (lines: string[], re: RegExp) => lines.map((l) => re.exec(l)?.[1]).find((v) => v !== undefined);
    const runs = (lines: string[], code: string) =>
      Number(value(lines, new RegExp(`^fcctl_runs_total\\{.*exit_code="${code}".*\\} (\\S+)$`)));
    expect(await pod('ok', dbs.fcUrl)).toBe(0);
    const before = await pushed('fcctl-deliveries-scan');
    const last = value(before, success);
    expect(last).toBeDefined();
    expect(runs(before, '0')).toBeGreaterThanOrEqual(1);
    // the FC database unreachable: three scans exit 3, each in a new pod
    for (const n of [1, 2, 3]) expect(await pod(`down-${n}`, 'mysql://fcctl:x@127.0.0.1:29001/none')).toBe(3);
    const lines = await pushed('fcctl-deliveries-scan');
    expect(value(lines, /^fcctl_run_exit_code\{.*command="deliveries scan".*\} (\S+)$/)).toBe('3');
    // the last success time is the good scan's: FcctlDeliveriesScanStale fires 5 minutes after it
    expect(value(lines, success)).toBe(last);
    // and the failures add up across pods (FcctlRunsFailing: increase of exit 3 over 30 min >= 3)
    expect(runs(lines, '3')).toBe(runs(before, '3') + 3);
    expect(runs(lines, '0')).toBe(runs(before, '0'));
  }, 120_000);
});
