import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/lib/config/config.js';
import { maskUrl, redact } from '../../src/lib/config/mask.js';
import { cleanEnv, jsonLines, runCli, spawnCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'fcctl-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('config precedence: flag > env > env file > config file', () => {
  const cfg = file(
    'c.json',
    JSON.stringify({ appKey: 'from-file', appCode: 'code-file', flowUrl: 'http://file', amqpUrl: 'amqp://f' }),
  );

  it('resolves each setting from the highest source that has it', () => {
    const c = resolveConfig({
      flags: { config: cfg, appKey: 'from-flag' },
      env: { FCCTL_APP_KEY: 'from-env', FCCTL_APP_CODE: 'code-env', FCCTL_FLOW_URL: '' },
    });
    expect(c.appKey).toEqual({ value: 'from-flag', source: 'flag' });
    expect(c.appCode).toEqual({ value: 'code-env', source: 'env' });
    // An empty variable counts as unset, so the config file's value is used.
    expect(c.flowUrl).toEqual({ value: 'http://file', source: 'config' });
    expect(c.shDatabaseUrl).toEqual({ value: undefined, source: 'unset' });
  });

  it('reads *_FILE variables and strips one trailing newline', () => {
    const secret = file('secret', 'hunter2-top\n');
    const c = resolveConfig({ flags: {}, env: { FCCTL_APP_SECRET_FILE: secret } });
    expect(c.appSecret).toEqual({ value: 'hunter2-top', source: 'env-file' });
  });

  it('config show reports the source of each value', async () => {
    const r = await runCli(['--json', '--config', cfg, '--app-key', 'from-flag', 'config', 'show'], {
      env: cleanEnv({ FCCTL_APP_CODE: 'code-env' }),
    });
    expect(r.code).toBe(0);
    const rows = Object.fromEntries(
      jsonLines(r.stdout)
        .filter((l) => l['type'] === 'row')
        .map((l) => [l['setting'], l]),
    );
    expect(rows['appKey']).toMatchObject({ value: 'from-flag', source: 'flag' });
    expect(rows['appCode']).toMatchObject({ value: 'code-env', source: 'env' });
    expect(rows['flowUrl']).toMatchObject({ value: 'http://file', source: 'config' });
  });
});

describe('secrets are never shown', () => {
  const secret = 'Zq9-very-secret-Value';
  const env = cleanEnv({
    FCCTL_APP_SECRET: secret,
    FCCTL_FC_DATABASE_URL: `mysql://fcctl:${secret}@127.0.0.1:3306/fc`,
    FCCTL_AMQP_URL: `amqp://u:${encodeURIComponent('p@ss/word')}@127.0.0.1:5672`,
  });

  it('config show masks them in JSON and on a terminal', async () => {
    for (const args of [
      ['--json', 'config', 'show'],
      ['config', 'show'],
    ]) {
      const r = await runCli(args, { env, tty: args[0] !== '--json' });
      expect(r.code).toBe(0);
      expect(r.stdout + r.stderr).not.toContain(secret);
      expect(r.stdout + r.stderr).not.toContain('p%40ss');
      expect(r.stdout).toContain('mysql://fcctl:***@127.0.0.1:3306/fc');
    }
  });

  it('a password with a raw "?" or "#" (the URL parser reads it as a port and a query): never shown; the doctor broker line says to percent-encode it', async () => {
    for (const sep of ['?', '#']) {
      const amqpUrl = `amqps://fcctl:2024${sep}${secret}@mq.example/fc`;
      const show = await runCli(['--json', 'config', 'show'], { env: cleanEnv({ FCCTL_AMQP_URL: amqpUrl }) });
      expect(show.code).toBe(0);
      expect(show.stdout + show.stderr).not.toContain(secret);
      const doctor = await runCli(['--json', 'doctor'], { env: cleanEnv({ FCCTL_AMQP_URL: amqpUrl }) });
      expect(doctor.stdout + doctor.stderr).not.toContain(secret);
      const broker = jsonLines(doctor.stdout).find((l) => l['check'] === 'broker');
      expect(broker).toMatchObject({ status: 'fail', detail: expect.stringMatching(/percent-encode it/) });
    }
  });

  it('mask helpers', () => {
    expect(maskUrl('mysql://u:pw@h:1/db')).toBe('mysql://u:***@h:1/db');
    expect(maskUrl('mysql://u@h/db')).toBe('mysql://u@h/db');
    expect(maskUrl('not a url with secret')).toBe('***');
    // a raw "?", "#" or "/" in a password that parses (host "u", port 2024): still masked
    expect(maskUrl('amqps://u:2024?Spring@mq/fc')).toBe('amqps://u:***@mq/fc');
    expect(maskUrl('amqps://u:2024#Spring@mq/fc')).toBe('amqps://u:***@mq/fc');
    expect(maskUrl('amqps://us?er:Spring@mq/fc')).toBe('amqps://us?er:***@mq/fc');
    expect(maskUrl('amqps://mq:5671/fc?heartbeat=5')).toBe('amqps://mq:5671/fc?heartbeat=5');
    expect(redact('x amqp://a:b@c y', [])).toBe('x amqp://a:***@c y');
    expect(redact('token abcdef here', ['abcdef'])).toBe('token *** here');
    // Linear in the text: a 5 MB word (a pasted file in an argument) is redacted, not hung on.
    const word = 'a'.repeat(5_000_000);
    expect(redact(`${word} mysql://u:pw@h/db`, [])).toBe(`${word} mysql://u:***@h/db`);
  });
});

describe('bad config file → exit 2, one line, nothing else done', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['invalid JSON', '{"appKey": ', /not valid JSON/],
    ['not an object', '[1,2]', /must hold a JSON object/],
    ['unknown key', '{"appKee":"x"}', /unknown key "appKee"/],
    ['non-string value', '{"appKey":5}', /"appKey" must be a string/],
  ];
  for (const [name, text, message] of cases) {
    it(name, async () => {
      const p = file(`bad-${name.replace(/\W/g, '_')}.json`, text);
      const r = await runCli(['--config', p, 'config', 'show']);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
      expect(r.stderr).toMatch(message);
    });
  }
  it('missing file', async () => {
    const r = await runCli(['--config', join(dir, 'nope.json'), 'config', 'show']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^fcctl: --config: cannot read .*nope\.json: ENOENT\n$/);
  });
});

describe('the real binary', () => {
  it('--version prints the package version, exit 0', async () => {
    const r = await spawnCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('unknown options and commands: exit 2, one line, no stack trace', async () => {
    for (const args of [['db', 'init', '--side', 'xx'], ['frobnicate'], ['db', 'check', '--bogus']]) {
      const r = await spawnCli(args);
      expect(r.code).toBe(2);
      const lines = r.stderr.split('\n').filter(Boolean);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^fcctl: /);
      expect(r.stderr).not.toMatch(/\bat .*\.js:\d+/);
    }
  });

  it('--help lists only the commands that work', async () => {
    const r = await spawnCli(['--help']);
    expect(r.code).toBe(0);
    const commands = r.stdout
      .split('Commands:')[1]!
      .split('\n')
      .map((l) => /^ {2}(\S+)/.exec(l)?.[1])
      .filter(Boolean);
    expect(commands).toEqual([
      'db',
      'deliveries',
      'apply-command',
      'doctor',
      'dev',
      'canon',
      'manifest',
      'reconcile',
      'retire-absent',
      'projection',
      'pause',
      'resume',
      'config',
      'explain',
      'status',
      'help',
    ]);
  });
});
