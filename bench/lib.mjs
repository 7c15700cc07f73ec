// What every bench script shares: where the built binary is, how options are declared, how a
// child's output is collected, how the machine is named in a report.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import mysql from 'mysql2/promise';

/** The checkout, with a trailing slash. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The built command (npm run build first). */
export const FCCTL = join(ROOT, 'bin/fcctl');

/** A string option, with its default when it has one. */
export const str = (value) => (value === undefined ? { type: 'string' } : { type: 'string', default: value });
/** A boolean option, off by default. */
export const flag = () => ({ type: 'boolean', default: false });

/** The script's options (node:util parseArgs); every bench takes --json. */
export function benchArgs(options) {
  return parseArgs({ options: { ...options, json: flag() } }).values;
}

/** The middle value; of an even count, the mean of the two middle ones. */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** A child's stdout and stderr, collected as text while it runs. */
export function collect(child) {
  const text = { out: '', err: '' };
  child.stdout.on('data', (c) => (text.out += c));
  child.stderr.on('data', (c) => (text.err += c));
  return text;
}

/** `8 × AMD EPYC …`: the machine's CPUs, as a report names them. */
export const cpuText = () => `${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}`;
/** `0.52 0.40 0.31` */
export const loadText = (loadavg = os.loadavg()) => loadavg.map((x) => x.toFixed(2)).join(' ');

/** Peak of VmHWM (and VmRSS) from /proc/<pid>/status, sampled every `everyMs` until stopped. */
export function sampleMemory(pid, everyMs = 50) {
  let hwmKb = 0;
  let rssKb = 0;
  let cpuTicks = 0;
  const read = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      hwmKb = Math.max(hwmKb, Number(/^VmHWM:\s+(\d+)/m.exec(status)?.[1] ?? 0));
      rssKb = Math.max(rssKb, Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0));
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpuTicks = Number(fields[11]) + Number(fields[12]); // utime + stime
    } catch {
      // the process has exited: keep the last sample
    }
  };
  const timer = setInterval(read, everyMs);
  read();
  return {
    stop: () => {
      clearInterval(timer);
      return { peakHwmMb: hwmKb / 1024, peakRssMb: rssKb / 1024, cpuSeconds: cpuTicks / 100 };
    },
    sample: read,
  };
}

/** FCCTL_TEST_MYSQL_URL, or the one `scripts/services.sh env` prints for the local services. */
export function testMysqlUrl() {
  if (process.env.FCCTL_TEST_MYSQL_URL) return process.env.FCCTL_TEST_MYSQL_URL;
  const r = spawnSync('bash', [join(ROOT, 'scripts/services.sh'), 'env'], { encoding: 'utf8' });
  const m = /^export FCCTL_TEST_MYSQL_URL=['"]?([^'"\n]+)['"]?$/m.exec(r.stdout ?? '');
  return m ? m[1] : undefined;
}

/**
 * A benchmark's scratch space: fresh database names on the FCCTL_TEST_MYSQL_URL server (exit 2
 * when it is unset), a temp directory, an admin connection, a log that --json silences, and a
 * cleanup (also on SIGINT) that drops the databases and removes the directory unless --keep.
 * @example const { dbs, dir, admin, log, cleanup } = await scratch('throttle', args) // dbs[0].name, dbs[0].url
 */
export async function scratch(kind, args, suffixes = ['']) {
  const adminUrl = testMysqlUrl();
  if (!adminUrl) {
    console.error(`bench/${kind}: FCCTL_TEST_MYSQL_URL is not set (eval "$(scripts/services.sh env)")`);
    process.exit(2);
  }
  const mysqlp = (await import('mysql2/promise')).default;
  const dbs = suffixes.map((s) => {
    const name = `fcctl_bench_${kind.replace(/-/g, '_')}_${process.pid}${s}`;
    return { name, url: `${adminUrl.replace(/\/$/, '')}/${name}` };
  });
  const dir = mkdtempSync(join(args.dir ?? os.tmpdir(), `fcctl-bench-${kind}-`));
  const admin = await mysqlp.createConnection({ uri: adminUrl, multipleStatements: true });
  const log = (s) => {
    if (!args.json) console.error(s);
  };
  const cleanup = async () => {
    for (const db of dbs) await admin.query(`DROP DATABASE IF EXISTS \`${db.name}\``).catch(() => undefined);
    await admin.end().catch(() => undefined);
    if (!args.keep) rmSync(dir, { recursive: true, force: true });
  };
  process.on('SIGINT', () => {
    cleanup().finally(() => process.exit(130));
  });
  return { adminUrl, dbs, dir, admin, log, cleanup };
}

/**
 * `count` outbox rows of `bytes`-byte snapshots, one INSERT … SELECT per 50,000 from MariaDB's
 * Sequence engine (`seq_A_to_B`). `history`: a month old, of consumer `benchhistory`, BROKER_ACCEPTED
 * with every 41st row DEAD (one of 7 reasons), `update_time` set as fcctl's writes leave it;
 * otherwise PENDING rows of consumer `bench`, never written. History first holds the low ids.
 */
export async function insertOutboxRows(db, count, { history, bytes }) {
  for (let from = 1; from <= count; from += 50_000) {
    const to = Math.min(count, from + 49_999);
    // history: BROKER_ACCEPTED, then every 41st row DEAD with one of 7 reasons; backlog: PENDING, never written
    const dead = history ? 'seq % 41 = 0' : 'FALSE';
    await db.query(
      'INSERT INTO answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, ' +
        'answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, state, last_error, broker_accepted_at, create_time, update_time) ' +
        `SELECT UUID(), 'UPSERT', '100021', ?, 1, 1, '00000000-0000-0000-0000-000000000000', 1, LPAD(CONCAT(?, seq), 36, '0'), 1, REPEAT('0', 64), ` +
        `NOW() - INTERVAL ? DAY, CONCAT('{"h":"', REPEAT('x', ?), '"}'), ` +
        `CASE WHEN ${dead} THEN 'DEAD' WHEN ? THEN 'BROKER_ACCEPTED' ELSE 'PENDING' END, ` +
        `CASE WHEN ${dead} THEN CONCAT('NO_ROUTE: bench history ', seq % 7) END, ` +
        `CASE WHEN ? AND NOT (${dead}) THEN NOW() - INTERVAL 30 DAY END, NOW() - INTERVAL ? DAY, ` +
        `CASE WHEN ? THEN NOW() - INTERVAL 30 DAY + INTERVAL seq SECOND END FROM seq_${from}_to_${to}`,
      [
        history ? 'benchhistory' : 'bench',
        history ? 'h' : 'p',
        history ? 30 : 0,
        Math.max(0, bytes - 8),
        history,
        history,
        history ? 30 : 0,
        history,
      ],
    );
  }
}

export const BATCH = 500; // fcctl's default --batch-size
const DUE =
  "state IN ('PENDING', 'FAILED') AND (next_retry_at IS NULL OR next_retry_at <= NOW()) AND (claim_owner IS NULL OR claim_expires_at IS NULL OR claim_expires_at < NOW())";

/**
 * The `minimal` reference: what any relay must do at least, and nothing else (no checks, no
 * envelope: each stored snapshot is published behind a fixed 420-byte head, the envelope's size).
 * Drains every due row of the database at `url`; resolves the seconds it took. Issue 20's second
 * reference of the send bench, and the latency bench's reference under saturation (issue 27).
 */
export async function minimalRelay(conn, url, { window, exchange }) {
  const pool = mysql.createPool({ uri: url, connectionLimit: 2, dateStrings: true, supportBigNumbers: true });
  const ch = await conn.createConfirmChannel();
  const owner = `bench-minimal-${process.pid}`;
  const head = Buffer.alloc(420, 0x20);
  const win = confirmWindowOf(ch, window, exchange);
  const claim = async () => {
    const c = await pool.getConnection();
    try {
      await c.query('START TRANSACTION');
      const [rows] = await c.query(
        `SELECT id, event_id, consumer_app_key, consumer_school_id, CAST(CONVERT(snapshot_json USING utf8mb4) AS BINARY) AS snapshot_json FROM answer_delivery WHERE ${DUE} LIMIT ? FOR UPDATE SKIP LOCKED`,
        [BATCH],
      );
      if (rows.length)
        await c.query(
          'UPDATE answer_delivery SET claim_owner = ?, claim_expires_at = NOW() + INTERVAL 60 SECOND WHERE id IN (?)',
          [owner, rows.map((r) => r.id)],
        );
      await c.query('COMMIT');
      return rows;
    } finally {
      c.release();
    }
  };
  const batch = async (rows, previousSent) => {
    await previousSent; // batches publish in claim order
    const confirms = [];
    for (const row of rows) {
      const body = Buffer.concat([head, row.snapshot_json]);
      if (win.full) await win.slot();
      confirms.push(win.send(`fc.snapshot.v2.${row.consumer_app_key}.${row.consumer_school_id}`, body, row.event_id));
    }
    return { confirms, rows };
  };
  const t0 = performance.now();
  const pending = [];
  let sent = Promise.resolve();
  for (;;) {
    const rows = await claim();
    if (rows.length === 0) break;
    const b = batch(rows, sent);
    sent = b;
    pending.push(
      b.then(async ({ confirms }) => {
        await Promise.all(confirms);
        await pool.query(
          "UPDATE answer_delivery SET state = 'BROKER_ACCEPTED', broker_accepted_at = NOW(), claim_owner = NULL, claim_expires_at = NULL, update_time = NOW() WHERE id IN (?) AND claim_owner = ? AND state IN ('PENDING', 'FAILED')",
          [rows.map((r) => r.id), owner],
        );
      }),
    );
    if (pending.length >= 2) await pending.shift();
  }
  await Promise.all(pending);
  const seconds = (performance.now() - t0) / 1000;
  await ch.close();
  await pool.end();
  return { seconds };
}

/**
 * Publishing with confirms in a window of WINDOW unconfirmed messages (mandatory, persistent), as
 * both references do: `await w.slot()` while `w.full`, then `w.send(key, body, id)` is the
 * promise of the broker's confirm (no await at all while the window has room).
 */
export function confirmWindowOf(ch, WINDOW, EXCHANGE) {
  let inFlight = 0;
  const waiters = [];
  return {
    get full() {
      return inFlight >= WINDOW;
    },
    slot: async () => {
      while (inFlight >= WINDOW) await new Promise((r) => waiters.push(r));
    },
    send: (routingKey, body, messageId) => {
      inFlight++;
      return new Promise((resolve, reject) =>
        ch.publish(
          EXCHANGE,
          routingKey,
          body,
          { mandatory: true, persistent: true, messageId, contentType: 'application/json' },
          (err) => {
            inFlight--;
            waiters.shift()?.();
            err ? reject(err) : resolve();
          },
        ),
      );
    },
  };
}
