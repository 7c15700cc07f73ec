import { readFileSync } from 'node:fs';
import mysql from 'mysql2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityCheck } from '../../src/lib/db/tls.js';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { testMysqlUrl } from '../helpers/db.js';
import { startTlsMariaDb, type TlsMariaDb } from '../helpers/tls-mariadb.js';

/** The FC database check of `doctor --json`: its status and detail line. */
async function doctorFc(url: string): Promise<{ code: number; status: string; detail: string }> {
  const r = await runCli(['doctor', '--json'], { env: cleanEnv({ FCCTL_FC_DATABASE_URL: url }) });
  const line = r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { type: string; check?: string; status?: string; detail?: string })
    .find((l) => l.type === 'check' && l.check === 'FC database');
  return { code: r.code, status: line?.status ?? '(none)', detail: line?.detail ?? '' };
}

/** `deliveries scan --json` against an FC database URL: exit code and stderr lines. */
async function scan(url: string): Promise<{ code: number; errors: string[] }> {
  const r = await runCli(['deliveries', 'scan', '--json'], { env: cleanEnv({ FCCTL_FC_DATABASE_URL: url }) });
  return { code: r.code, errors: r.stderr.split('\n').filter(Boolean) };
}

/**
 * The verdicts of {@link identityCheck} (VERIFY_IDENTITY at 127.0.0.1) on 4 connections one
 * after another of one mysql2 pool, and whether each resumed the TLS session of an earlier one.
 */
async function identityVerdicts(db: TlsMariaDb): Promise<Array<{ resumed: boolean; refused: boolean }>> {
  const check = identityCheck({ mode: 'VERIFY_IDENTITY' }, '127.0.0.1');
  const ssl = { ca: readFileSync(db.files.ca), rejectUnauthorized: true };
  const pool = mysql.createPool({
    host: '127.0.0.1',
    port: db.port,
    user: 'fcctl',
    password: 'fcctl-pw',
    ssl,
    connectionLimit: 4,
  });
  const verdicts: Array<{ resumed: boolean; refused: boolean }> = [];
  pool.on('connection', (conn) => {
    const stream = (conn as unknown as { stream: { isSessionReused(): boolean } }).stream;
    verdicts.push({ resumed: stream.isSessionReused(), refused: check(stream) !== null });
  });
  const held: mysql.PoolConnection[] = [];
  for (let i = 0; i < 4; i++)
    held.push(await new Promise((resolve, reject) => pool.getConnection((err, c) => (err ? reject(err) : resolve(c)))));
  for (const c of held) c.release();
  await new Promise((resolve) => pool.end(resolve));
  return verdicts;
}

// A private MariaDB that takes TLS only (require_secure_transport=ON), its certificate naming
// only IP:127.0.0.1, made by openssl for this file.
describe('MySQL TLS: a server that requires it, certificate for IP:127.0.0.1', () => {
  let db: TlsMariaDb;
  let verifyCa: string;
  beforeAll(async () => {
    db = await startTlsMariaDb('IP:127.0.0.1');
    verifyCa = `ssl-mode=VERIFY_CA&ssl-ca=${db.files.ca}`;
    const r = await runCli(['db', 'init', '--side', 'fc'], {
      env: cleanEnv({ FCCTL_FC_DATABASE_URL: db.url('fcctl', 'fcctl-pw', verifyCa) }),
    });
    expect(r.code, r.stderr).toBe(0);
  }, 120_000);
  afterAll(() => db?.stop(), 30_000);

  it.each([
    { mode: 'no ssl-mode (the default, PREFERRED)', query: () => '' },
    { mode: 'PREFERRED', query: () => 'ssl-mode=PREFERRED' },
    { mode: 'REQUIRED', query: () => 'ssl-mode=required' },
    { mode: 'VERIFY_CA with the CA', query: () => verifyCa },
    { mode: 'ssl-ca alone (VERIFY_CA)', query: () => `ssl-ca=${db.files.ca}` },
    {
      mode: 'VERIFY_IDENTITY at the IP the certificate names',
      query: () => `${verifyCa.replace('VERIFY_CA', 'VERIFY_IDENTITY')}`,
    },
  ])('$mode: doctor and deliveries scan connect (over TLS: the server takes nothing else)', async ({ query }) => {
    const url = db.url('fcctl', 'fcctl-pw', query());
    expect(await doctorFc(url)).toMatchObject({
      code: 0,
      status: 'ok',
      detail: expect.stringMatching(
        /^connected over TLSv1\.[23] \(ssl-mode=(PREFERRED|REQUIRED|VERIFY_CA|VERIFY_IDENTITY)\), server /,
      ),
    });
    expect(await scan(url)).toEqual({ code: 0, errors: [] });
  });

  it('identity checked on every connection of a pool: a resumed TLS session of a checked server passes', async () => {
    const verdicts = await identityVerdicts(db);
    expect(verdicts.some((v) => v.resumed)).toBe(true);
    expect(verdicts).toEqual(verdicts.map((v) => ({ ...v, refused: false })));
  });

  it('DISABLED: exit 3, one line saying the server requires TLS, never a bare access denied', async () => {
    const url = db.url('fcctl', 'fcctl-pw', 'ssl-mode=DISABLED');
    const s = await scan(url);
    expect(s.code).toBe(3);
    expect(s.errors).toHaveLength(1);
    expect(s.errors[0]).toMatch(/TLS: the server requires TLS \(require_secure_transport\).*ssl-mode=DISABLED/);
    expect(s.errors[0]).not.toMatch(/ACCESS_DENIED|fcctl-pw/);
    const d = await doctorFc(url);
    expect(d).toMatchObject({ code: 3, status: 'fail' });
    expect(d.detail).toMatch(/the server requires TLS/);
  });

  it('DISABLED with a wrong password is still access denied (the TLS probe does not log in)', async () => {
    const s = await scan(db.url('fcctl', 'wrong-pw', 'ssl-mode=DISABLED'));
    expect(s.code).toBe(3);
    expect(s.errors).toEqual([expect.stringMatching(/ER_ACCESS_DENIED_ERROR$/)]);
  });

  it('a wrong CA: exit 3, one line naming the refused certificate', async () => {
    const url = db.url('fcctl', 'fcctl-pw', `ssl-mode=VERIFY_CA&ssl-ca=${db.files.wrongCa}`);
    const s = await scan(url);
    expect(s.code).toBe(3);
    expect(s.errors).toEqual([
      expect.stringMatching(
        /TLS: the server's certificate was refused \(ssl-mode=VERIFY_CA\): self-signed certificate/,
      ),
    ]);
    expect(await doctorFc(url)).toMatchObject({ code: 3, detail: expect.stringMatching(/certificate was refused/) });
  });

  it('VERIFY_IDENTITY at a host the certificate does not name (localhost): exit 3, one line', async () => {
    const url = db
      .url('fcctl', 'fcctl-pw', verifyCa.replace('VERIFY_CA', 'VERIFY_IDENTITY'))
      .replace('@127.0.0.1:', '@localhost:');
    const s = await scan(url);
    expect(s.code).toBe(3);
    expect(s.errors).toEqual([expect.stringMatching(/TLS: .*ssl-mode=VERIFY_IDENTITY.*localhost/)]);
    // VERIFY_CA does not ask for the name: the same host connects
    expect(await scan(db.url('fcctl', 'fcctl-pw', verifyCa).replace('@127.0.0.1:', '@localhost:'))).toEqual({
      code: 0,
      errors: [],
    });
  });

  it('a user that REQUIREs X509: denied without a client certificate, connects with ssl-cert and ssl-key', async () => {
    const without = await scan(db.url('x509user', 'x509-pw', verifyCa));
    expect(without.code).toBe(3);
    expect(without.errors).toHaveLength(1);
    const cert = `&ssl-cert=${db.files.clientCert}&ssl-key=${db.files.clientKey}`;
    expect(await scan(db.url('x509user', 'x509-pw', verifyCa + cert))).toEqual({ code: 0, errors: [] });
    expect(await doctorFc(db.url('x509user', 'x509-pw', verifyCa + cert))).toMatchObject({ code: 0, status: 'ok' });
  });

  it.each([
    { query: 'sslmode=REQUIRED', want: /unknown parameter "sslmode"/ },
    { query: 'ssl-mode=ON', want: /ssl-mode=ON is not one of DISABLED, PREFERRED/ },
    {
      query: 'ssl-mode=REQUIRED&ssl-ca=/x.pem',
      want: /ssl-ca is checked only by ssl-mode=VERIFY_CA or VERIFY_IDENTITY/,
    },
    { query: 'ssl-ca=/nonexistent/ca.pem', want: /ssl-ca=\/nonexistent\/ca.pem: cannot read it: ENOENT/ },
    { query: 'ssl-mode=REQUIRED&ssl-cert=/c.pem', want: /ssl-cert and ssl-key go together/ },
  ])('bad TLS parameters ($query): exit 2, one line', async ({ query, want }) => {
    const s = await scan(db.url('fcctl', 'fcctl-pw', query));
    expect(s.code).toBe(2);
    expect(s.errors).toEqual([expect.stringMatching(want)]);
  });
});

describe('MySQL TLS: certificate for DNS:localhost only', () => {
  let db: TlsMariaDb;
  let verifyIdentity: string;
  beforeAll(async () => {
    db = await startTlsMariaDb('DNS:localhost');
    verifyIdentity = `ssl-mode=VERIFY_IDENTITY&ssl-ca=${db.files.ca}`;
  }, 120_000);
  afterAll(() => db?.stop(), 30_000);

  it('VERIFY_IDENTITY at 127.0.0.1: exit 3 (mysql2 alone checks an IP host against "localhost" and lets it pass)', async () => {
    const s = await scan(db.url('fcctl', 'fcctl-pw', verifyIdentity));
    expect(s.code).toBe(3);
    expect(s.errors).toEqual([
      expect.stringMatching(/TLS: the server's certificate does not name .*VERIFY_IDENTITY.*127\.0\.0\.1/),
    ]);
    const d = await doctorFc(db.url('fcctl', 'fcctl-pw', verifyIdentity));
    expect(d).toMatchObject({ code: 3, status: 'fail', detail: expect.stringMatching(/does not name/) });
  });

  it('VERIFY_IDENTITY at 127.0.0.1: the server the certificate does not name never gets the login (checked in the handshake)', async () => {
    // The general log lists each login the server accepted. Checked after the login, the refused
    // server had it already (and, over TLS, caching_sha2_password's full authentication sends the
    // password itself).
    db.sql("SET GLOBAL log_output = 'TABLE'; SET GLOBAL general_log = 1; TRUNCATE mysql.general_log;");
    const s = await scan(db.url('fcctl', 'fcctl-pw', verifyIdentity));
    const logins = db.sql(
      "SET GLOBAL general_log = 0; SELECT COUNT(*) FROM mysql.general_log WHERE command_type = 'Connect' AND argument LIKE 'fcctl@%';",
    );
    expect(s.code).toBe(3);
    expect(Number(logins.trim())).toBe(0);
    // the check is the same on the name the certificate holds: that login goes through
    db.sql('TRUNCATE mysql.general_log; SET GLOBAL general_log = 1;');
    const url = db.url('fcctl', 'fcctl-pw', verifyIdentity).replace('@127.0.0.1:', '@localhost:');
    expect(await doctorFc(url)).toMatchObject({ status: 'ok' });
    const named = db.sql(
      "SET GLOBAL general_log = 0; SELECT COUNT(*) FROM mysql.general_log WHERE command_type = 'Connect' AND argument LIKE 'fcctl@%';",
    );
    expect(Number(named.trim())).toBeGreaterThan(0);
  });

  it('a refused server stays refused on connections that resume its TLS session (they show no certificate)', async () => {
    const verdicts = await identityVerdicts(db);
    expect(verdicts.some((v) => v.resumed)).toBe(true);
    expect(verdicts).toEqual(verdicts.map((v) => ({ ...v, refused: true })));
  });

  it('VERIFY_IDENTITY at localhost, the name it holds: the FC database connects (no schema here: doctor says so)', async () => {
    const url = db.url('fcctl', 'fcctl-pw', verifyIdentity).replace('@127.0.0.1:', '@localhost:');
    expect(await doctorFc(url)).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^connected/) });
  });
});

describe('MySQL TLS against a server that offers none (the shared plaintext MariaDB)', () => {
  const url = (query: string) => `${testMysqlUrl()}/mysql?${query}`;
  it('PREFERRED (the default) goes on in plaintext, as the mysql client does', async () => {
    expect(await doctorFc(url('ssl-mode=PREFERRED'))).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/^connected in plaintext \(ssl-mode=PREFERRED\), server /),
    });
  });
  it('REQUIRED: exit 3, one line saying the server offers no TLS', async () => {
    const s = await scan(url('ssl-mode=REQUIRED'));
    expect(s.code).toBe(3);
    expect(s.errors).toEqual([
      expect.stringMatching(/TLS: the server does not offer TLS, which ssl-mode=REQUIRED requires$/),
    ]);
  });
});
