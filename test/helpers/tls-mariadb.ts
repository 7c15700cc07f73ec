import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

/** The certificates a TLS test uses, made by openssl: PEM file paths. */
export interface TlsFiles {
  readonly dir: string;
  /** the CA that signed the server and client certificates */
  readonly ca: string;
  /** another CA, which signed nothing the server shows */
  readonly wrongCa: string;
  readonly clientCert: string;
  readonly clientKey: string;
}

/** A private MariaDB that takes TLS connections only (`require_secure_transport=ON`). */
export interface TlsMariaDb {
  readonly port: number;
  readonly files: TlsFiles;
  /** user `fcctl`/`fcctl-pw` (any TLS client), user `x509user`/`x509-pw` (REQUIRE X509); database `tlsdb` */
  url(user: string, password: string, query?: string): string;
  /** runs SQL as the server's socket superuser; its output (tab-separated rows) */
  sql(text: string): string;
  stop(): Promise<void>;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** A CA (`<name>.pem`, `<name>.key`). */
function makeCa(dir: string, name: string): void {
  openssl(
    dir,
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${name}`].concat([
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
    ]),
  );
}

/** A certificate `<name>.pem`/`<name>.key` signed by `ca`, naming `san` (e.g. `DNS:localhost`), if any. */
function makeCert(dir: string, ca: string, name: string, san: string | null): void {
  openssl(dir, [
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
  ]);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, san ? `subjectAltName=${san}\n` : 'basicConstraints=CA:FALSE\n');
  openssl(
    dir,
    ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-CAcreateserial'].concat([
      '-days',
      '2',
      '-extfile',
      ext,
      '-out',
      `${name}.pem`,
    ]),
  );
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** The first free port of the private range (FCCTL_TLS_MYSQL_PORTS `first-last`, default 46001-46009). */
async function freePort(): Promise<number> {
  const [first, last] = (process.env['FCCTL_TLS_MYSQL_PORTS'] ?? '46001-46009').split('-').map(Number) as [
    number,
    number,
  ];
  for (let p = first; p <= last; p++) if (await portFree(p)) return p;
  throw new Error(`no free port in ${first}-${last} for the TLS MariaDB`);
}

/**
 * Starts a private MariaDB with TLS required, its certificates made here: the server's names
 * `san` (`DNS:localhost`, `IP:127.0.0.1`, …). Its data lives in a temp dir removed by stop().
 * @example const db = await startTlsMariaDb('DNS:localhost'); … await db.stop();
 */
export async function startTlsMariaDb(san: string): Promise<TlsMariaDb> {
  const dir = mkdtempSync(join(tmpdir(), 'fcctl-tlsdb-'));
  makeCa(dir, 'ca');
  makeCa(dir, 'wrong-ca');
  makeCert(dir, 'ca', 'server', san);
  makeCert(dir, 'ca', 'client', null);
  const data = join(dir, 'data');
  const sock = join(dir, 'mysqld.sock');
  const me = userInfo().username;
  execFileSync(
    'mariadb-install-db',
    ['--no-defaults', `--datadir=${data}`, `--user=${me}`, '--auth-root-authentication-method=socket'],
    { stdio: 'pipe' },
  );
  const port = await freePort();
  const server = spawn(
    'mariadbd',
    [
      '--no-defaults',
      `--user=${me}`,
      `--datadir=${data}`,
      `--socket=${sock}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--log-error=${join(dir, 'error.log')}`,
      `--pid-file=${join(dir, 'mysqld.pid')}`,
      '--skip-name-resolve',
      '--innodb-buffer-pool-size=16M',
      `--ssl-ca=${join(dir, 'ca.pem')}`,
      `--ssl-cert=${join(dir, 'server.pem')}`,
      `--ssl-key=${join(dir, 'server.key')}`,
      '--require-secure-transport=ON',
    ],
    { stdio: 'ignore' },
  );
  const sql = (text: string) =>
    execFileSync('mariadb', [`--socket=${sock}`, '-u', me, '-N'], { input: text, stdio: 'pipe', encoding: 'utf8' });
  for (let i = 0; ; i++) {
    try {
      sql('SELECT 1');
      break;
    } catch (err) {
      if (i > 120 || server.exitCode !== null) {
        const log = existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8').slice(-500) : '';
        server.kill('SIGKILL');
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`TLS MariaDB did not start: ${log}`, { cause: err });
      }
      await delay(250);
    }
  }
  sql(`CREATE DATABASE tlsdb CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER 'fcctl'@'127.0.0.1' IDENTIFIED BY 'fcctl-pw';
GRANT ALL PRIVILEGES ON *.* TO 'fcctl'@'127.0.0.1';
CREATE USER 'x509user'@'127.0.0.1' IDENTIFIED BY 'x509-pw' REQUIRE X509;
GRANT ALL PRIVILEGES ON *.* TO 'x509user'@'127.0.0.1';`);
  return {
    port,
    files: {
      dir,
      ca: join(dir, 'ca.pem'),
      wrongCa: join(dir, 'wrong-ca.pem'),
      clientCert: join(dir, 'client.pem'),
      clientKey: join(dir, 'client.key'),
    },
    url: (user, password, query) => `mysql://${user}:${password}@127.0.0.1:${port}/tlsdb${query ? `?${query}` : ''}`,
    sql,
    async stop() {
      const exited = new Promise((r) => server.once('exit', r));
      if (server.exitCode === null) server.kill('SIGTERM');
      await Promise.race([exited, delay(20_000)]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
