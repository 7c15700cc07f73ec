import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAmqpUrl } from '../../src/lib/amqp/url.js';

const UNITS = fileURLToPath(new URL('../../docs/systemd/', import.meta.url));
const ANALYZE = '/usr/bin/systemd-analyze';
// Debian's systemd package ships the tool and the standard units (scripts/services.sh up installs
// it). Missing, the verify tests fail with one clear line, in CI and everywhere else: a check that
// silently skipped would let a broken unit through.
const SYSTEM_UNITS = ['/usr/lib/systemd/system', '/lib/systemd/system'].find((d) =>
  existsSync(join(d, 'sysinit.target')),
);
const MISSING = `${ANALYZE} or the standard units (sysinit.target) are missing: run \`bash scripts/services.sh up\` (installs Debian's systemd package)`;
const haveTool = existsSync(ANALYZE) && SYSTEM_UNITS !== undefined;

const files = readdirSync(UNITS).sort();
const services = files.filter((f) => f.endsWith('.service') && !f.includes('@'));
const timers = files.filter((f) => f.endsWith('.timer'));
// Issue 27 §4: the two follow commands as long-running services, beside the batch units (each
// batch service has its timer).
const SERVICE_MODE = {
  'fcctl-deliveries-relay.service': 'deliveries send',
  'fcctl-apply-resolver.service': 'apply-command resolve-unknown',
} as const;
const batch = services.filter((f) => !(f in SERVICE_MODE));
/** --drain-seconds' default (docs: the service-mode contract, issue 27 §1). */
const DRAIN_DEFAULT_SECONDS = 30;
/** systemd's time span (`45`, `45s`, `2min`, `1min 30s`) in seconds. */
function seconds(span: string): number {
  const units: Record<string, number> = { '': 1, s: 1, sec: 1, min: 60, m: 60, h: 3600 };
  let total = 0;
  for (const part of span.trim().split(/\s+/)) {
    const m = /^(\d+)(s|sec|min|m|h)?$/.exec(part);
    if (!m) throw new Error(`unreadable time span ${span}`);
    total += Number(m[1]) * units[m[2] ?? '']!;
  }
  return total;
}
const text = (f: string) => readFileSync(join(UNITS, f), 'utf8');
/** The values of `key=` lines (comments left out). */
const values = (body: string, key: string) =>
  body
    .split('\n')
    .filter((l) => l.startsWith(`${key}=`))
    .map((l) => l.slice(key.length + 1));

let root: string | undefined;
afterAll(() => root && rmSync(root, { recursive: true, force: true }));

/**
 * A filesystem root for `systemd-analyze verify --root` (no systemd running as PID 1 here): the
 * distribution's units (sysinit.target, timers.target, …), ours in /etc/systemd/system, and
 * stand-in executables for every ExecStart binary (verify refuses a unit whose binary is missing).
 */
function verifyRoot(): string {
  root = mkdtempSync(join(tmpdir(), 'fcctl-systemd-'));
  mkdirSync(join(root, 'usr/lib/systemd'), { recursive: true });
  cpSync(SYSTEM_UNITS!, join(root, 'usr/lib/systemd/system'), { recursive: true });
  mkdirSync(join(root, 'etc/systemd/system'), { recursive: true });
  cpSync(UNITS, join(root, 'etc/systemd/system'), { recursive: true });
  mkdirSync(join(root, 'usr/bin'), { recursive: true });
  symlinkSync('usr/bin', join(root, 'bin'));
  for (const f of files) {
    for (const exec of values(text(f), 'ExecStart')) {
      const bin = exec.replace(/^[-@:+!]+/, '').split(' ')[0]!;
      if (exec.startsWith('-') || (!bin.startsWith('/usr/bin/') && !bin.startsWith('/bin/'))) continue;
      const stand = join(root, 'usr/bin', bin.split('/').at(-1)!);
      writeFileSync(stand, '#!/bin/sh\n');
      chmodSync(stand, 0o755);
    }
  }
  return root;
}

describe('docs/systemd units', () => {
  it('systemd-analyze verify: no error and no warning', () => {
    expect(haveTool, MISSING).toBe(true);
    const r = verifyRoot();
    // a template is verified through an instance of it, as OnFailure= starts it
    const names = [...services, ...timers, 'fcctl-failure@fcctl-reconcile.service.service'];
    const out = spawnSync(ANALYZE, ['verify', '--man=no', `--root=${r}`, ...names], { encoding: 'utf8' });
    expect(out.stderr + out.stdout).toBe('');
    expect(out.status).toBe(0);
  });

  it('verify does catch a broken unit here (the check is not vacuous)', () => {
    expect(haveTool, MISSING).toBe(true);
    const r = root ?? verifyRoot();
    writeFileSync(
      join(r, 'etc/systemd/system/fcctl-broken.service'),
      '[Service]\nType=oneshot\nExecStrt=/usr/bin/fcctl x\nExecStart=/usr/bin/fcctl-missing\n',
    );
    const out = spawnSync(ANALYZE, ['verify', '--man=no', `--root=${r}`, 'fcctl-broken.service'], { encoding: 'utf8' });
    expect(out.stderr).toContain("Unknown key 'ExecStrt'");
    expect(out.status).not.toBe(0);
  });

  it('every service reads /etc/fcctl/env, reports failures through fcctl-failure@, and counts only exit 0 as success', () => {
    expect(batch.length).toBeGreaterThanOrEqual(4);
    for (const f of batch) {
      const body = text(f);
      expect(values(body, 'EnvironmentFile'), f).toEqual(['/etc/fcctl/env']);
      expect(values(body, 'OnFailure'), f).toEqual(['fcctl-failure@%n.service']);
      // exit 1 = items failed or a stop cut the run short: not a success to hide from alerting
      expect(values(body, 'SuccessExitStatus'), f).toEqual([]);
      expect(values(body, 'Type'), f).toEqual(['oneshot']);
      expect(timers, f).toContain(f.replace(/\.service$/, '.timer'));
    }
    expect(files).toContain('fcctl-failure@.service');
    // the reporter must not report itself
    expect(values(text('fcctl-failure@.service'), 'OnFailure')).toEqual([]);
  });

  it('the service-mode units run their command with --follow, restart on failure, and stop by SIGTERM with more time than the drain', () => {
    for (const [f, command] of Object.entries(SERVICE_MODE)) {
      expect(files, f).toContain(f);
      const body = text(f);
      const exec = values(body, 'ExecStart');
      expect(exec, f).toHaveLength(1);
      const port = f === 'fcctl-deliveries-relay.service' ? 9464 : 9465;
      expect(exec[0], f).toMatch(new RegExp(`/usr/bin/fcctl ${command} --follow --listen :${port} --json$`));
      expect(values(body, 'Type'), f).toEqual(['exec']);
      expect(values(body, 'Restart'), f).toEqual(['on-failure']);
      // exit 2 (a bad flag or setting) is not retried in a loop
      expect(values(body, 'RestartPreventExitStatus'), f).toEqual(['2']);
      expect(values(body, 'KillSignal'), f).toEqual(['SIGTERM']);
      const drain = /--drain-seconds (\d+(?:\.\d+)?)/.exec(exec[0]!);
      const drainSeconds = drain ? Number(drain[1]) : DRAIN_DEFAULT_SECONDS;
      const stop = values(body, 'TimeoutStopSec');
      expect(stop, f).toHaveLength(1);
      // systemd's SIGKILL must not cut the drain short (a few seconds more for the summary)
      expect(seconds(stop[0]!), f).toBeGreaterThanOrEqual(drainSeconds + 10);
      expect(values(body, 'EnvironmentFile'), f).toEqual(['/etc/fcctl/env']);
      expect(values(body, 'User'), f).toEqual(['fcctl']);
      expect(values(body, 'OnFailure'), f).toEqual(['fcctl-failure@%n.service']);
      expect(values(body, 'SuccessExitStatus'), f).toEqual([]);
      expect(values(body, 'NoNewPrivileges'), f).toEqual(['yes']);
      expect(values(body, 'PrivateTmp'), f).toEqual(['yes']);
      expect(values(body, 'WantedBy'), f).toEqual(['multi-user.target']);
      // a long-running service, not started by a timer
      expect(timers, f).not.toContain(f.replace(/\.service$/, '.timer'));
    }
    // the resolver's secret as a credential, as the batch resolver unit has it
    expect(values(text('fcctl-apply-resolver.service'), 'ExecStart')[0]).toMatch(
      /^\/usr\/bin\/env FCCTL_APP_SECRET_FILE=%d\/app-secret /,
    );
    expect(values(text('fcctl-apply-resolver.service'), 'LoadCredential')).toEqual(
      values(text('fcctl-apply-resolve.service'), 'LoadCredential'),
    );
    // the batch units stay for batch mode
    for (const f of ['fcctl-deliveries-send.timer', 'fcctl-apply-resolve.timer', 'fcctl-reconcile.timer'])
      expect(files).toContain(f);
  });

  it('the relay units reach RabbitMQ over mutual TLS with EXTERNAL: the URL names only files they load as credentials', () => {
    for (const f of ['fcctl-deliveries-relay.service', 'fcctl-deliveries-send.service']) {
      const exec = values(text(f), 'ExecStart')[0]!;
      const url = /^\/usr\/bin\/env FCCTL_AMQP_URL=(\S+) \/usr\/bin\/fcctl deliveries send /.exec(exec)?.[1];
      expect(url, f).toBeDefined();
      const settings = parseAmqpUrl(url!.replaceAll('%d', '/run/credentials/x'));
      expect([settings.tls, settings.verify, settings.authMechanism], f).toEqual([true, 'verify_peer', 'external']);
      expect(url, `${f}: no password in the unit`).not.toMatch(/:\/\/[^/]*@/);
      const loaded = values(text(f), 'LoadCredential').map((c) => `/run/credentials/x/${c.split(':')[0]}`);
      expect([settings.cacertfile, settings.certfile, settings.keyfile].sort(), f).toEqual(loaded.sort());
      for (const c of values(text(f), 'LoadCredential')) expect(c, f).toMatch(/^[\w.-]+:\/etc\/fcctl\/tls\/[\w.-]+$/);
    }
  });

  it('the time spans are read as systemd reads them', () => {
    expect([seconds('45'), seconds('45s'), seconds('2min'), seconds('1min 30s')]).toEqual([45, 45, 120, 90]);
    expect(() => seconds('infinity')).toThrow();
  });

  it('every timer is persistent (a run missed while down happens at boot) and installed under timers.target', () => {
    for (const f of timers) {
      expect(values(text(f), 'Persistent'), f).toEqual(['true']);
      expect(values(text(f), 'WantedBy'), f).toEqual(['timers.target']);
    }
  });

  it('the nightly unit is `reconcile run --all` with the stable output directory the crontab uses', () => {
    const exec = values(text('fcctl-reconcile.service'), 'ExecStart')[0]!;
    expect(exec).toContain('reconcile run --all --consumer 100100 --out-dir /var/lib/fcctl/reconcile ');
    expect(exec).toContain('--metrics-file /var/lib/node_exporter/textfile_collector/fcctl_reconcile.prom');
    expect(readFileSync(fileURLToPath(new URL('../../docs/cron/fcctl.crontab', import.meta.url)), 'utf8')).toContain(
      'reconcile run --all --consumer 100100 --out-dir /var/lib/fcctl/reconcile ',
    );
  });

  it("the failure reporter's command, run with stand-ins for systemctl, journalctl and systemd-cat, logs the unit's result", () => {
    const exec = values(text('fcctl-failure@.service'), 'ExecStart').find((e) => e.startsWith('/bin/sh -c '))!;
    // systemd expands `$NAME` itself: every `$` meant for the shell is written `$$`
    expect(exec).not.toMatch(/(?<!\$)\$(?!\$)/);
    const script = /^\/bin\/sh -c '(.*)' sh %i$/.exec(exec)![1]!.replaceAll('$$', '$');
    const dir = mkdtempSync(join(tmpdir(), 'fcctl-failure-'));
    try {
      const stand = (name: string, body: string) => {
        writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
        chmodSync(join(dir, name), 0o755);
      };
      stand('systemctl', 'echo "$*" >>"$(dirname "$0")/calls"; printf "Result=exit-code\\nExecMainStatus=1\\n"');
      stand('journalctl', 'echo "$*" >>"$(dirname "$0")/calls"; echo "last log line"');
      stand('systemd-cat', 'echo "[$*] $(cat)" >>"$(dirname "$0")/journal"');
      execFileSync('sh', ['-c', script, 'sh', 'fcctl-deliveries-send.service'], {
        env: { PATH: `${dir}:/usr/bin:/bin` },
      });
      expect(readFileSync(join(dir, 'journal'), 'utf8')).toBe(
        '[-t fcctl-failure -p err] fcctl unit fcctl-deliveries-send.service failed: Result=exit-code ExecMainStatus=1\n[-t fcctl-failure -p info] last log line\n',
      );
      expect(readFileSync(join(dir, 'calls'), 'utf8')).toContain('--unit=fcctl-deliveries-send.service');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
