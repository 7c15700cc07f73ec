import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * A private RabbitMQ node with a TLS listener only (no plaintext one), started the way
 * `scripts/services.sh` starts the shared one (the scripts of /usr/lib/rabbitmq/bin, as the
 * invoking user, its own Erlang cookie, data dir and epmd), with certificates made by openssl:
 * mutual TLS required (`verify_peer` + `fail_if_no_peer_cert`) and the
 * `rabbitmq_auth_mechanism_ssl` plugin, the login taken from the client certificate's CN.
 * Its own ports (FCCTL_TEST_TLS_AMQP_PORT, then +1 distribution, +2 epmd): it disturbs nobody.
 */

const run = promisify(execFile);
const RMQ_BIN = process.env['FCCTL_RABBITMQ_BIN'] ?? '/usr/lib/rabbitmq/bin';
const NODE = 'fcctl-tls@localhost';
export const TLS_VHOST = 'fcctl';
/** the PLAIN user of the node (loopback test credentials) */
export const TLS_PLAIN_USER = { name: 'fcctl-tls', password: 'fcctl-tls-local' };
/** the client certificate's CN, and the EXTERNAL user named after it */
export const CLIENT_CN = 'fcctl-client';

export interface TlsFiles {
  readonly ca: string;
  /** the client certificate and key, signed by `ca` */
  readonly cert: string;
  readonly key: string;
  /** a CA that signed nothing the broker uses (a "wrong CA") */
  readonly otherCa: string;
  /** a client certificate and key signed by `otherCa`: the broker does not trust them */
  readonly strangerCert: string;
  readonly strangerKey: string;
  /** a client certificate signed by `ca` whose CN no user of the broker has */
  readonly nobodyCert: string;
  readonly nobodyKey: string;
  /** `key`, encrypted with a passphrase */
  readonly encryptedKey: string;
}

export interface TlsBroker {
  readonly port: number;
  readonly files: TlsFiles;
  /** an amqps URL to the node's vhost, `params` as its query */
  url(params: Record<string, string>, user?: { name: string; password: string } | null): string;
  /** rabbitmqctl against the node */
  ctl(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

async function openssl(dir: string, ...args: string[]): Promise<void> {
  await run('openssl', args, { cwd: dir, timeout: 30_000 });
}

/** A self-signed CA in `dir`: `<name>.pem` and `<name>.key`. */
async function makeCaFiles(dir: string, name: string): Promise<void> {
  await openssl(
    dir,
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
  );
}

/** A certificate signed by `ca`, `cn` its CN, `ext` its extensions: `<name>.pem` and `<name>.key`. */
async function makeSigned(dir: string, ca: string, name: string, cn: string, ext: string): Promise<void> {
  await openssl(
    dir,
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    `/CN=${cn}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
  );
  writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
  await openssl(
    dir,
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.pem`,
  );
}

async function makeCertificates(dir: string): Promise<TlsFiles> {
  await makeCaFiles(dir, 'ca');
  await makeCaFiles(dir, 'other-ca');
  await makeSigned(
    dir,
    'ca',
    'server',
    'localhost',
    'subjectAltName = DNS:localhost, IP:127.0.0.1\nextendedKeyUsage = serverAuth',
  );
  await makeSigned(dir, 'ca', 'client', CLIENT_CN, 'extendedKeyUsage = clientAuth');
  await makeSigned(dir, 'other-ca', 'stranger', CLIENT_CN, 'extendedKeyUsage = clientAuth');
  await makeSigned(dir, 'ca', 'nobody', 'fcctl-nobody', 'extendedKeyUsage = clientAuth');
  await openssl(dir, 'pkey', '-in', 'client.key', '-aes256', '-passout', 'pass:fcctl', '-out', 'client-encrypted.key');
  const f = (n: string) => join(dir, n);
  return {
    ca: f('ca.pem'),
    cert: f('client.pem'),
    key: f('client.key'),
    otherCa: f('other-ca.pem'),
    strangerCert: f('stranger.pem'),
    strangerKey: f('stranger.key'),
    nobodyCert: f('nobody.pem'),
    nobodyKey: f('nobody.key'),
    encryptedKey: f('client-encrypted.key'),
  };
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Starts the node (about 5–10 s) and sets up its vhost and users. */
export async function startTlsBroker(): Promise<TlsBroker> {
  const port = Number(process.env['FCCTL_TEST_TLS_AMQP_PORT'] ?? 47005);
  for (const p of [port, port + 1, port + 2])
    if (await portOpen(p)) throw new Error(`port ${p} is in use: set FCCTL_TEST_TLS_AMQP_PORT to a free base port`);
  if (!existsSync(join(RMQ_BIN, 'rabbitmq-server')))
    throw new Error(`no rabbitmq-server in ${RMQ_BIN}: scripts/services.sh up installs it (or set FCCTL_RABBITMQ_BIN)`);
  const dir = mkdtempSync(join(tmpdir(), 'fcctl-tls-mq-'));
  const certs = join(dir, 'certs');
  mkdirSync(certs);
  const files = await makeCertificates(certs);
  const env = {
    ...process.env,
    RABBITMQ_NODENAME: NODE,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_DIST_PORT: String(port + 1),
    ERL_EPMD_PORT: String(port + 2),
    ERL_EPMD_ADDRESS: '127.0.0.1',
    RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: join(dir, 'log'),
    RABBITMQ_PID_FILE: join(dir, 'rabbit.pid'),
    RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq'),
    RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
    HOME: dir,
    ERL_CRASH_DUMP: join(dir, 'erl_crash.dump'),
  };
  writeFileSync(join(dir, 'enabled_plugins'), '[rabbitmq_auth_mechanism_ssl].\n');
  writeFileSync(
    join(dir, 'rabbitmq.conf'),
    [
      'listeners.tcp = none',
      `listeners.ssl.default = 127.0.0.1:${port}`,
      `ssl_options.cacertfile = ${files.ca}`,
      `ssl_options.certfile = ${join(certs, 'server.pem')}`,
      `ssl_options.keyfile = ${join(certs, 'server.key')}`,
      'ssl_options.verify = verify_peer',
      'ssl_options.fail_if_no_peer_cert = true',
      'auth_mechanisms.1 = PLAIN',
      'auth_mechanisms.2 = AMQPLAIN',
      'auth_mechanisms.3 = EXTERNAL',
      // the EXTERNAL login is the certificate's CN, not its whole distinguished name
      'ssl_cert_login_from = common_name',
      'loopback_users = none',
      'log.console = false',
      'log.file.level = warning',
      '',
    ].join('\n'),
  );
  const ctl = async (...args: string[]) =>
    (await run(join(RMQ_BIN, 'rabbitmqctl'), ['-n', NODE, ...args], { env, timeout: 60_000 })).stdout;
  const out = openSync(join(dir, 'rabbitmq.out'), 'w');
  const server = spawn(join(RMQ_BIN, 'rabbitmq-server'), [], {
    env,
    cwd: dir,
    stdio: ['ignore', out, out],
    detached: true,
  });
  closeSync(out);
  server.unref();
  const stop = async (keepFiles = false) => {
    await ctl('shutdown').catch(() => undefined);
    await run('epmd', ['-port', String(port + 2), '-kill'], { env }).catch(() => undefined);
    if (server.exitCode === null && server.pid) {
      try {
        process.kill(-server.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (!keepFiles) rmSync(dir, { recursive: true, force: true });
  };
  try {
    // As services.sh: the listener first (await_startup fails at once while the node is not up yet).
    const until = Date.now() + 120_000;
    while (!(await portOpen(port))) {
      if (server.exitCode !== null || Date.now() > until) throw new Error('no TLS listener');
      await new Promise((r) => setTimeout(r, 250));
    }
    await ctl('await_startup', '--timeout', '120');
    await ctl('add_vhost', TLS_VHOST);
    await ctl('add_user', TLS_PLAIN_USER.name, TLS_PLAIN_USER.password);
    await ctl('set_permissions', '-p', TLS_VHOST, TLS_PLAIN_USER.name, '.*', '.*', '.*');
    // The EXTERNAL user: named after the certificate's CN, no password at all.
    await ctl('add_user', CLIENT_CN, 'unused');
    await ctl('clear_password', CLIENT_CN);
    await ctl('set_permissions', '-p', TLS_VHOST, CLIENT_CN, '.*', '.*', '.*');
  } catch (err) {
    const log = ` (see ${join(dir, 'rabbitmq.out')} and ${join(dir, 'log')})`;
    await stop(true);
    throw new Error(`the TLS broker did not start: ${(err as Error).message.split('\n')[0]}${log}`);
  }
  return {
    port,
    files,
    url: (params, user = TLS_PLAIN_USER) => {
      const auth = user ? `${encodeURIComponent(user.name)}:${encodeURIComponent(user.password)}@` : '';
      const query = new URLSearchParams(params).toString();
      return `amqps://${auth}localhost:${port}/${TLS_VHOST}${query ? `?${query}` : ''}`;
    },
    ctl,
    stop: () => stop(),
  };
}
