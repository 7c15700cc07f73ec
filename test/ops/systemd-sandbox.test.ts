import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import amqp from 'amqplib';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PUBLISHER, defaultConsumerKeys } from '../../src/lib/dev/seed.js';
import { seedDevDatabases } from '../helpers/dev-seed.js';
import { servicesTest } from '../helpers/services.js';
import { freshVhost } from '../helpers/vhost.js';

// Issue 36 §18: the units' sandbox. `systemd-analyze security` rates each unit file (no systemd
// runs as PID 1 here), and each batch unit's ExecStart is run under the restrictions that could
// break it, emulated: the file system read-only but the unit's ReadWritePaths= and
// StateDirectory= (a private mount namespace, every mount remounted read-only — stricter than
// ProtectSystem=strict and PrivateTmp=, /tmp is read-only too — and a /proc of processes only, as
// ProtectProc=invisible and ProcSubset=pid mount it), no new privileges and an empty
// capability bounding set (setpriv), and SystemCallFilter=@system-service ~@privileged with
// SystemCallErrorNumber=EPERM (strace injects EPERM into every other system call, as the seccomp
// filter would answer it).

const UNITS = fileURLToPath(new URL('../../docs/systemd/', import.meta.url));
const FCCTL = fileURLToPath(new URL('../../bin/fcctl', import.meta.url));
const ANALYZE = '/usr/bin/systemd-analyze';
const SECRET = 'sandbox-test-secret';
const CONSUMERS = defaultConsumerKeys(3, DEFAULT_PUBLISHER.appKey);
const test = servicesTest({ prefix: 'sandbox', flowApps: { [DEFAULT_PUBLISHER.appKey]: SECRET } });
/** The most a unit may score (`systemd-analyze security`: 0 safe … 10 unsafe). */
const MAX_EXPOSURE = 3.0;
/** The services' --listen ports here (this test's private range). */
const LISTEN_BASE = 25010;

const services = readdirSync(UNITS)
  .filter((f) => f.endsWith('.service'))
  .sort();
const text = (f: string) => readFileSync(join(UNITS, f), 'utf8');
const values = (body: string, key: string) =>
  body
    .split('\n')
    .filter((l) => l.startsWith(`${key}=`))
    .map((l) => l.slice(key.length + 1));

/** The overall exposure `systemd-analyze security --offline` gives a unit file, and its exit code at the threshold. */
function exposure(dir: string, file: string): { level: number; status: number | null } {
  const out = spawnSync(ANALYZE, ['security', '--offline=yes', `--threshold=${MAX_EXPOSURE * 10}`, file], {
    cwd: dir,
    encoding: 'utf8',
  });
  const m = /Overall exposure level for \S+: (\d+\.\d)/.exec(out.stdout);
  if (!m) throw new Error(`no exposure level for ${file}: ${out.stdout}${out.stderr}`);
  return { level: Number(m[1]), status: out.status };
}

/** The system calls of a `systemd-analyze syscall-filter` group, its nested groups expanded. */
function syscalls(group: string): Set<string> {
  const out = spawnSync(ANALYZE, ['syscall-filter', group], { encoding: 'utf8' }).stdout;
  const names = new Set<string>();
  for (const line of out.split('\n').slice(1)) {
    const name = line.trim();
    if (name === '' || name.startsWith('#')) continue;
    for (const n of name.startsWith('@') ? syscalls(name) : [name]) names.add(n);
  }
  return names;
}

describe('docs/systemd units: sandboxed', () => {
  it(`systemd-analyze security rates every unit at most ${MAX_EXPOSURE} (was 8.8 EXPOSED, the reporter 9.6)`, () => {
    expect(existsSync(ANALYZE), `${ANALYZE} is missing: run \`bash scripts/services.sh up\``).toBe(true);
    const levels = Object.fromEntries(services.map((f) => [f, exposure(UNITS, f)]));
    for (const [f, { level, status }] of Object.entries(levels)) {
      expect(level, f).toBeLessThanOrEqual(MAX_EXPOSURE);
      expect(status, f).toBe(0);
    }
  });

  it('the rating is not vacuous: a unit without its sandbox lines is over the threshold', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fcctl-sandbox-'));
    const sandbox =
      /^(Protect|Private|Restrict|SystemCall|Capability|Ambient|Lock|RemoveIPC|Keyring|Device|ProcSubset|NoNew|UMask|ReadWrite)/;
    const bare = text('fcctl-deliveries-relay.service')
      .split('\n')
      .filter((l) => !sandbox.test(l))
      .join('\n');
    writeFileSync(join(dir, 'bare.service'), bare);
    const r = exposure(dir, 'bare.service');
    rmSync(dir, { recursive: true, force: true });
    expect(r.level).toBeGreaterThan(8);
    expect(r.status).not.toBe(0);
  });

  it('no unit sets MemoryDenyWriteExecute=: Node under a W^X lock dies at start-up (measured here with PR_SET_MDWE)', () => {
    for (const f of services) expect(values(text(f), 'MemoryDenyWriteExecute'), f).toEqual([]);
    // the same rule the seccomp filter of MemoryDenyWriteExecute=yes enforces, through
    // prctl(PR_SET_MDWE = 65, PR_MDWE_REFUSE_EXEC_GAIN) (syscall 157 on x86-64), then exec
    const mdwe = 'syscall(157, 65, 1, 0, 0, 0) == 0 or exit 9; exec @ARGV or exit 8';
    const locked = spawnSync('perl', ['-e', mdwe, process.execPath, FCCTL, '--version'], { encoding: 'utf8' });
    expect(locked.status, 'PR_SET_MDWE unavailable (kernel < 6.3?)').not.toBe(9);
    expect(locked.status).not.toBe(0);
    expect(locked.stderr).toContain('SetPermissions');
    const open = spawnSync('perl', ['-e', 'exec @ARGV or exit 8', process.execPath, FCCTL, '--version'], {
      encoding: 'utf8',
    });
    expect(open.status).toBe(0);
  });

  it('every system call outside the filter fails with EPERM, never kills (SystemCallErrorNumber=EPERM: V8 probes pkey_alloc)', () => {
    for (const f of services.filter((s) => !s.includes('@'))) {
      expect(values(text(f), 'SystemCallFilter'), f).toEqual(['@system-service', '~@privileged']);
      expect(values(text(f), 'SystemCallErrorNumber'), f).toEqual(['EPERM']);
      expect(values(text(f), 'RestrictAddressFamilies'), f).toEqual(['AF_INET AF_INET6 AF_UNIX']);
    }
    expect(syscalls('@system-service').has('pkey_alloc')).toBe(false);
  });

  test('each unit runs its ExecStart in the emulated sandbox (a service until ready, then stopped): exit 0, files only where the unit may write', async ({
    dbs,
    tmp,
    flowCenter,
  }) => {
    const allowed = syscalls('@system-service');
    for (const s of syscalls('@privileged')) allowed.delete(s);
    const vhost = freshVhost();
    try {
      await seedDevDatabases(dbs.env(), 7, 60, 2);
      await bindConsumers(vhost.url, CONSUMERS);
      const creds = join(tmp, 'credentials');
      mkdirSync(creds);
      writeFileSync(join(creds, 'app-secret'), `${SECRET}\n`, { mode: 0o400 });
      const env: Record<string, string> = {
        PATH: '/usr/bin:/bin',
        HOME: '/nonexistent',
        FCCTL_FC_DATABASE_URL: dbs.fcUrl,
        FCCTL_SH_DATABASE_URL: dbs.shUrl,
        FCCTL_AMQP_URL: vhost.url,
        FCCTL_FLOW_URL: flowCenter.url,
        FCCTL_APP_KEY: DEFAULT_PUBLISHER.appKey,
        FCCTL_APP_CODE: DEFAULT_PUBLISHER.appCode,
        FCCTL_SERVICE_TIME_ZONE: 'UTC',
      };
      const units = services.filter((f) => !f.includes('@'));
      expect(units).toEqual([
        'fcctl-apply-resolve.service',
        'fcctl-apply-resolver.service',
        'fcctl-deliveries-relay.service',
        'fcctl-deliveries-scan.service',
        'fcctl-deliveries-send.service',
        'fcctl-reconcile.service',
      ]);
      const root = join(tmp, 'root');
      for (const [i, f] of units.entries()) {
        const body = text(f);
        // the host paths of this unit, under a directory of the test's own
        const here = (p: string) => join(root, p);
        const writable = [
          // `-`: a missing directory is fcctl's own one-line exit 3 at the write, not 226/NAMESPACE
          ...values(body, 'ReadWritePaths').map((p) => p.replace(/^-/, '')),
          ...values(body, 'StateDirectory').map((d) => `/var/lib/${d}`),
        ];
        for (const w of writable) mkdirSync(here(w), { recursive: true });
        const exec = values(body, 'ExecStart')[0]!;
        // /usr/bin/env VAR=… fcctl …: the credential directory is %d; the TLS URL (no TLS broker
        // here) gives way to the test's FCCTL_AMQP_URL
        const words = exec
          .replaceAll('%d', creds)
          .split(' ')
          .filter((w) => !w.startsWith('FCCTL_AMQP_URL='));
        // a service's --listen :946x on a port of this test's range
        const port = LISTEN_BASE + i;
        const argv = words.map((w) =>
          w === '/usr/bin/fcctl'
            ? FCCTL
            : w.replace(/^\/var\/lib\//, `${root}/var/lib/`).replace(/^:946\d$/, `127.0.0.1:${port}`),
        );
        // the trace goes through cat to fd 3 (a socket pair): the file system is read-only in there
        const run = sandboxed(
          writable.map(here),
          [
            'strace',
            '-f',
            '-qq',
            '-o',
            '|cat >&3',
            '-e',
            `inject=!${[...allowed].map((s) => `?${s}`).join(',')}:error=EPERM`,
          ],
          argv,
          env,
        );
        if (values(body, 'Type')[0] === 'exec') {
          // a service: ready, then stopped as systemd stops it (SIGTERM to the main process)
          expect(await ready(port), `${f} never ready`).toBe(true);
          // its metrics too (read under the restricted /proc)
          const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
          expect(metrics.status, f).toBe(200);
          expect(await metrics.text(), f).toMatch(/^# TYPE fcctl_\w+ /m);
          process.kill(run.firstPid()!, 'SIGTERM');
        }
        const r = await run.done;
        expect(r.code, `${f}\n${r.out}`).toBe(0);
        const calls = r.trace;
        // the filter's EPERM was met (V8's pkey_alloc) and survived
        expect(calls, f).toMatch(/pkey_alloc\(.*EPERM.*INJECTED/);
        // RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX: no other socket
        for (const m of calls.matchAll(/ socket\((\w+),/g))
          expect(['AF_INET', 'AF_INET6', 'AF_UNIX'], f).toContain(m[1]);
        // nothing written outside the unit's writable paths (a refused write would have failed the run)
        expect(calls, f).not.toMatch(/EROFS/);
      }
      expect(readdirSync(join(root, '/var/lib/node_exporter/textfile_collector')).sort()).toEqual([
        'fcctl_apply.prom',
        'fcctl_reconcile.prom',
        'fcctl_scan.prom',
        'fcctl_send.prom',
      ]);
      expect(existsSync(join(root, '/var/lib/fcctl/reconcile/summary.json'))).toBe(true);
    } finally {
      vhost.drop();
    }
  }, 180_000);

  // Review of issue 36 §18: the failure reporter's hook (/etc/fcctl/on-failure, "mail, pager") runs
  // under NoNewPrivileges= (set, and implied by SystemCallFilter= and RestrictSUIDSGID=): a setuid or
  // setgid program gains nothing, so a local sendmail (Postfix's setgid postdrop, Exim's setuid
  // binary) cannot queue the mail. Emulated with a setgid program and a queue directory only its
  // group may write (as Postfix's maildrop, 1730); the unit and docs/operations.md say so.
  test("the failure reporter's hook gets no setuid/setgid: a local sendmail cannot queue mail, and the unit and docs say to send over the network", async ({
    tmp,
  }) => {
    const body = text('fcctl-failure@.service');
    expect(values(body, 'NoNewPrivileges')).toEqual(['yes']);
    const dir = join(tmp, 'setgid');
    mkdirSync(join(dir, 'maildrop'), { recursive: true });
    const drop = join(dir, 'maildrop');
    const postdrop = join(dir, 'postdrop');
    copyFileSync('/usr/bin/touch', postdrop);
    chownSync(postdrop, 0, 4242);
    chmodSync(postdrop, 0o2755);
    chownSync(drop, 4343, 4242);
    chmodSync(drop, 0o1730);
    // root without a capability (the reporter's user), as setpriv leaves it: the setgid group writes
    const plain = spawnSync('setpriv', ['--bounding-set=-all', '--inh-caps=-all', postdrop, join(drop, 'a')], {
      encoding: 'utf8',
    });
    expect(plain.status, plain.stderr).toBe(0);
    // and in the unit's sandbox (no new privileges): refused
    const r = await sandboxed([drop], [], [postdrop, join(drop, 'b')], { PATH: '/usr/bin:/bin' }).done;
    expect(r.code).not.toBe(0);
    expect(r.out).toContain('Permission denied');
    expect(existsSync(join(drop, 'b'))).toBe(false);
    const said = /no setuid or setgid program[\s\S]*local sendmail[\s\S]*over the network/;
    const comment = body
      .split('\n')
      .filter((l) => l.startsWith('#'))
      .map((l) => l.replace(/^#\s?/, ''))
      .join(' ');
    expect(comment).toMatch(said);
    const ops = readFileSync(fileURLToPath(new URL('../../docs/operations.md', import.meta.url)), 'utf8');
    expect(ops.replace(/\s+/g, ' ')).toMatch(
      /on-failure[^.]*\. .*no setuid or setgid program.*local sendmail.*over the network/,
    );
  });

  // Review of issue 36 §18: PrivateTmp= gives each unit its own empty /tmp (and ProtectHome= no
  // /home nor /root), so a --pause-file added to a unit under /tmp — gh-ost's habit, its throttle
  // file — is never seen: the operator touches the host's file, and the unit runs on as if not
  // paused. Emulated as systemd sets it up (a new tmpfs on /tmp in the unit's mount namespace);
  // the units and docs/operations.md say where a pause file goes.
  test("a --pause-file under /tmp is not the host's under PrivateTmp=: the unit runs on unpaused; the docs say where it goes", async ({
    dbs,
  }) => {
    const env = { PATH: '/usr/bin:/bin', ...dbs.env() } as Record<string, string>;
    const init = spawnSync(process.execPath, [FCCTL, 'db', 'init', '--side', 'all', '--dev'], {
      env,
      encoding: 'utf8',
    });
    expect(init.status, init.stderr).toBe(0);
    const hostTmp = mkdtempSync('/tmp/fcctl-pause-');
    // a directory the unit sees as the host does (/etc/fcctl in production; /run here, a test's own)
    const outside = mkdtempSync('/run/fcctl-pause-');
    // The checkout (and its .nodes/) may itself be under /tmp (a CI clone): bound to a place of its
    // own under /run first, so the private /tmp hides the host's files but not fcctl.
    const root = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');
    const keep = mkdtempSync('/run/fcctl-checkout-');
    const kept = (p: string) => (p.startsWith(`${root}/`) ? keep + p.slice(root.length) : p);
    const run = (pauseFile: string) => {
      writeFileSync(pauseFile, 'maintenance\n');
      const argv = ['reconcile', 'run', '--all', '--consumer', '100100', '--run-id', `pause-${Date.now()}`];
      const r = spawnSync(
        'unshare',
        [
          ...[
            '-m',
            '--propagation',
            'private',
            'sh',
            '-c',
            `mount --bind '${root}' '${keep}' && mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /var/tmp && exec "$@"`,
            'sh',
          ],
          ...[
            kept(process.execPath),
            kept(FCCTL),
            ...argv,
            '--out-dir',
            '/tmp/out',
            '--pause-file',
            pauseFile,
            '--json',
          ],
        ],
        { env, encoding: 'utf8' },
      );
      const summary = r.stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l['type'] === 'summary');
      expect(summary, r.stderr).toBeDefined();
      return summary!['stoppedBy'];
    };
    try {
      expect(run(join(hostTmp, 'pause'))).toBeUndefined();
    } finally {
      rmSync(hostTmp, { recursive: true, force: true });
    }
    try {
      expect(run(join(outside, 'pause'))).toBe('paused');
    } finally {
      rmSync(outside, { recursive: true, force: true });
      rmSync(keep, { recursive: true, force: true });
    }
    const ops = readFileSync(fileURLToPath(new URL('../../docs/operations.md', import.meta.url)), 'utf8');
    expect(ops.replace(/\s+/g, ' ')).toMatch(/--pause-file[^.]*never under `\/tmp`[^.]*PrivateTmp=/);
  });

  test('the sandbox emulation does refuse a write outside the writable paths (the check is not vacuous)', async ({
    tmp,
  }) => {
    const rw = join(tmp, 'rw');
    mkdirSync(rw);
    const r = await sandboxed([rw], [], ['sh', '-c', `touch ${rw}/ok && touch ${tmp}/outside`], {
      PATH: '/usr/bin:/bin',
    }).done;
    expect(r.code).not.toBe(0);
    expect(r.out).toContain('Read-only file system');
    expect(existsSync(join(rw, 'ok'))).toBe(true);
    expect(existsSync(join(tmp, 'outside'))).toBe(false);
  });
});

/**
 * Runs `argv` in a private mount namespace where every mount is read-only but `writable`, with no
 * new privileges and no capability (`prefix`: a tracer between the two, strace).
 */
function sandboxed(
  writable: readonly string[],
  prefix: readonly string[],
  argv: readonly string[],
  env: Record<string, string>,
): { done: Promise<{ code: number | null; out: string; trace: string }>; firstPid: () => number | undefined } {
  const script = [
    'n=$1; shift',
    // ProtectProc=invisible, ProcSubset=pid: a /proc of processes only (no /proc/cpuinfo, /proc/sys)
    'mount -t proc -o subset=pid,hidepid=invisible proc /proc || exit 96',
    'for w in $(seq "$n"); do mount --bind "$1" "$1"; keep="$keep|$1"; shift; done',
    // every other mount read-only (/proc, /sys, /dev as ProtectKernel*/PrivateDevices leave them)
    `awk '{print $5}' /proc/self/mountinfo | sort -u | while read -r m; do`,
    '  case "$m" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue;; esac',
    '  case "|$keep|" in *"|$m|"*) continue;; esac',
    '  mount -o remount,bind,ro "$m" || exit 97',
    'done',
    'exec setpriv --no-new-privs --bounding-set=-all --inh-caps=-all "$@"',
  ].join('\n');
  let trace = '';
  const done = new Promise<{ code: number | null; out: string; trace: string }>((resolve, reject) => {
    const child = spawn(
      'unshare',
      [
        '-m',
        '--propagation',
        'private',
        'sh',
        '-c',
        script,
        'sh',
        String(writable.length),
        ...writable,
        ...prefix,
        ...argv,
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] },
    );
    let out = '';
    (child.stdio[3] as NodeJS.ReadableStream).on('data', (c: Buffer) => (trace += c.toString('utf8')));
    child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, trace }));
  });
  // the traced command's pid: the first number of the trace
  return { done, firstPid: () => Number(/^(\d+) /.exec(trace)?.[1]) || undefined };
}

/** Waits up to 30 s for a service's /readyz to answer 200. */
async function ready(port: number): Promise<boolean> {
  for (let i = 0; i < 150; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

/** The consumers' side: the delivery exchange and one queue per seeded consumer key (no NO_ROUTE). */
async function bindConsumers(url: string, keys: readonly string[]): Promise<void> {
  const conn = await amqp.connect(url);
  const ch = await conn.createChannel();
  await ch.assertExchange('fc.answer.delivery.v2', 'topic', { durable: true });
  for (const key of keys) {
    await ch.assertQueue(`sandbox.consumer.${key}`, { durable: false, autoDelete: false });
    await ch.bindQueue(`sandbox.consumer.${key}`, 'fc.answer.delivery.v2', `fc.snapshot.v2.${key}.*`);
  }
  await conn.close();
}
