import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/lib/config/config.js';
import { checkUrlEncoding, withPassword } from '../../src/lib/config/password.js';
import { configRows } from '../../src/lib/config/show.js';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { testAmqpUrl, testMysqlUrl } from '../helpers/db.js';
import { type IsolatedVhost, isolatedVhost, mgmt } from '../helpers/management.js';
import { startTlsMariaDb, type TlsMariaDb } from '../helpers/tls-mariadb.js';

/** Every character a URL's userinfo cannot hold as it is. */
const ODD = 'p%a#b@c:d/e?f 9';

describe('withPassword and checkUrlEncoding (pure)', () => {
  it.each(['mysql://fcctl@db:3306/fc?ssl-mode=REQUIRED', 'amqps://pub@mq:5671/fcctl'])(
    '%s: the password is percent-encoded into the URL and decodes back whole',
    (url) => {
      const filled = new URL(withPassword('fcDatabaseUrl', url, ODD));
      expect(decodeURIComponent(filled.password)).toBe(ODD);
      expect(filled.hostname).toBe(new URL(url).hostname);
      expect(filled.search).toBe(new URL(url).search);
    },
  );
  it.each([
    { url: 'mysql://fcctl:inurl@db/fc', want: /has a password and its password setting is set too: keep one/ },
    { url: 'mysql://db/fc', want: /names no user/ },
    { url: 'not a url', want: /is not a valid URL: \*\*\*/ },
  ])('$url: exit 2', ({ url, want }) => {
    expect(() => withPassword('fcDatabaseUrl', url, 'x')).toThrow(want);
  });
  it.each(['amqp://pub:50%off@mq/fcctl', 'amqp://pub:a#b@mq/fcctl'])('%s: exit 2 saying to percent-encode', (url) => {
    expect(() => checkUrlEncoding('amqpUrl', url)).toThrow(/percent-encode % # \/ \? @ :/);
  });
});

describe('passwords from files: an empty file', () => {
  it('FCCTL_FC_DATABASE_PASSWORD_FILE naming an empty file: exit 2, one line naming it (not access denied, exit 3)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fcctl-pw-'));
    const file = join(dir, 'fc-password');
    writeFileSync(file, '\n');
    const r = await runCli(['deliveries', 'scan'], {
      env: cleanEnv({
        FCCTL_FC_DATABASE_URL: `${testMysqlUrl()}/mysql`.replace(/:\/\/([^:@]*)(:[^@]*)?@/, '://$1@'),
        FCCTL_FC_DATABASE_PASSWORD_FILE: file,
      }),
    });
    rmSync(dir, { recursive: true, force: true });
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n').filter(Boolean)).toEqual([
      expect.stringMatching(/^fcctl: FCCTL_FC_DATABASE_PASSWORD_FILE: .*fc-password is empty$/),
    ]);
  });
});

describe('passwords from settings: config show', () => {
  it('fills the URL; config show lists each password masked with its source, never its text', async () => {
    const env = {
      FCCTL_FC_DATABASE_URL: 'mysql://fcctl@db/fc',
      FCCTL_FC_DATABASE_PASSWORD_FILE: '/run/secrets/fc',
      FCCTL_SH_DATABASE_URL: 'mysql://fcctl@db/sh',
      FCCTL_SH_DATABASE_PASSWORD: 'sh-secret-pw',
      FCCTL_AMQP_URL: 'amqp://pub@mq/fcctl',
      FCCTL_AMQP_PASSWORD_FILE: '/run/secrets/mq',
    };
    const config = resolveConfig({
      flags: {},
      env,
      readFile: (p) => (p === '/run/secrets/fc' ? `${ODD}\n` : 'mq-secret-pw\n'),
    });
    expect(decodeURIComponent(new URL(config.fcDatabaseUrl.value!).password)).toBe(ODD);
    expect(config.fcDatabaseUrl.source).toBe('env');
    const rows = Object.fromEntries(configRows(config).map((r) => [r.setting, r]));
    expect(rows['fcDatabasePassword']).toMatchObject({
      value: '***',
      source: 'env-file',
      env: 'FCCTL_FC_DATABASE_PASSWORD',
    });
    expect(rows['shDatabasePassword']).toMatchObject({ value: '***', source: 'env' });
    expect(rows['amqpPassword']).toMatchObject({ value: '***', source: 'env-file' });
    expect(rows['fcDatabaseUrl']).toMatchObject({ value: 'mysql://fcctl:***@db/fc' });
    expect(JSON.stringify(rows)).not.toMatch(/sh-secret-pw|mq-secret-pw|p%a|p%25a/);
  });
  it('config show from the real CLI: masked rows, the file-held password nowhere in the output', async () => {
    const r = await runCli(['config', 'show', '--json'], {
      env: cleanEnv({ FCCTL_FC_DATABASE_URL: 'mysql://fcctl@db/fc', FCCTL_FC_DATABASE_PASSWORD: 'hunter2-top' }),
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('fcDatabasePassword');
    expect(r.stdout).not.toContain('hunter2');
  });
  it('a password in the URL and a password setting: exit 2, one line', async () => {
    const r = await runCli(['config', 'show'], {
      env: cleanEnv({ FCCTL_FC_DATABASE_URL: 'mysql://fcctl:inurl@db/fc', FCCTL_FC_DATABASE_PASSWORD: 'other' }),
    });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/keep one/)]);
  });
});

describe('passwords with % # @ : from files, on real servers', () => {
  let db: TlsMariaDb;
  let vhost: IsolatedVhost;
  let dir: string;
  beforeAll(async () => {
    db = await startTlsMariaDb('IP:127.0.0.1');
    dir = db.files.dir;
    db.sql(`CREATE USER 'odd'@'127.0.0.1' IDENTIFIED BY '${ODD}'; GRANT ALL PRIVILEGES ON *.* TO 'odd'@'127.0.0.1';`);
    writeFileSync(join(dir, 'db-password'), `${ODD}\n`);
    vhost = await isolatedVhost('pwfile');
    await mgmt('PUT', `/api/users/${encodeURIComponent(vhost.publisher.user)}`, { password: ODD, tags: '' });
    await mgmt('PUT', `/api/permissions/${vhost.path}/${encodeURIComponent(vhost.publisher.user)}`, {
      configure: '',
      write: '.*',
      read: '',
    });
  }, 120_000);
  afterAll(async () => {
    await vhost?.drop();
    await db?.stop();
  }, 30_000);

  const fcCheck = async (env: Record<string, string>) => {
    const r = await runCli(['doctor', '--json'], { env: cleanEnv(env) });
    const lines = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, string>);
    return { r, check: (name: string) => lines.find((l) => l['check'] === name) };
  };

  it('MySQL: FCCTL_FC_DATABASE_PASSWORD_FILE with % # @ : / ? logs in (over TLS)', async () => {
    const url = `mysql://odd@127.0.0.1:${db.port}/mysql?ssl-mode=REQUIRED`;
    const { check } = await fcCheck({
      FCCTL_FC_DATABASE_URL: url,
      FCCTL_FC_DATABASE_PASSWORD_FILE: join(dir, 'db-password'),
    });
    expect(check('FC database')).toMatchObject({ status: 'ok' });
  });

  it('MySQL: the same password raw in the URL: exit 2, one line saying to percent-encode it', async () => {
    const r = await runCli(['deliveries', 'scan'], {
      env: cleanEnv({ FCCTL_FC_DATABASE_URL: `mysql://odd:${ODD}@127.0.0.1:${db.port}/mysql` }),
    });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/percent-encode % # \/ \? @ :/)]);
    expect(r.stderr).not.toContain('a#b');
  });

  it('RabbitMQ: FCCTL_AMQP_PASSWORD_FILE with % # @ : / ? logs in', async () => {
    const file = join(dir, 'mq-password');
    writeFileSync(file, `${ODD}\n`);
    const base = new URL(testAmqpUrl());
    const url = `${base.protocol}//${encodeURIComponent(vhost.publisher.user)}@${base.host}/${vhost.path}`;
    const { check } = await fcCheck({ FCCTL_AMQP_URL: url, FCCTL_AMQP_PASSWORD_FILE: file });
    expect(check('broker')).toMatchObject({ status: 'ok', detail: 'connected' });
  });

  it('RabbitMQ: a raw % in the URL: doctor names it in one line saying to percent-encode it', async () => {
    const base = new URL(testAmqpUrl());
    const { check } = await fcCheck({ FCCTL_AMQP_URL: `amqp://u:50%off@${base.host}/x` });
    expect(check('broker')).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/stray % .*percent-encode/),
    });
    expect(check('broker')?.['detail']).not.toContain('50%off');
  });
});
