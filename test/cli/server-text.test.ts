/**
 * Text from the flow center or a database reaches a terminal escaped on every path, not only in
 * `explain` and `status` (review of issue 34 §12): the one error line on stderr (it quotes the flow
 * center's answer) and the JSON lines of every command (a `last_error` listed), as real
 * `bin/fcctl` processes (`npm run build` first) against the flow-center stand-in and real rows.
 */
import { describe, expect } from 'vitest';
import { APP, APP_FLOW, flowEnv, insertCommands, uniquePrefix } from '../helpers/apply-commands.js';
import { jsonLines, spawnCli } from '../helpers/cli.js';
import { insertDeliveries, uniqueConsumerKey } from '../helpers/deliveries.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'srvtext', init: 'all', flowApps: APP_FLOW });

/** CSI, OSC … ST as C1 (a terminal that acts on C1 clears the screen, retitles the window) and a bidi override. */
const HOSTILE = '\u009b2J\u009d0;PWNED\u009c\u202eoops';
/** Raw characters a terminal acts on or hides that must never be written: C1, U+2028/9, U+202E. */
const RAW = /[\u0080-\u009f\u2028\u2029\u202e]/;

describe('server and database text on stderr and in JSON lines', () => {
  test("the flow center's error body: escaped in the stop line on stderr and in the row's JSON line; the row keeps it whole", async ({
    dbs,
    flowCenter,
  }) => {
    const p = uniquePrefix('srv');
    await insertCommands(dbs.admin, dbs.shName, [{ bizId: `${p}-1`, applyAppKey: APP.key }]);
    await flowCenter.faults([{ path: '*', kind: 'status', status: 503, body: { error: HOSTILE } }]);
    const r = await spawnCli(
      ['--json', 'apply-command', 'resolve-unknown', '--request-timeout', '2', '--max-consecutive-errors', '1'],
      { env: flowEnv(dbs, flowCenter) },
    );
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).not.toMatch(RAW);
    expect(r.stderr).toContain('\\u009b2J\\u009d0;PWNED\\u009c\\u202eoops');
    expect(r.stdout).not.toMatch(RAW);
    const [[row]] = (await dbs.admin.query(
      `SELECT last_error FROM \`${dbs.shName}\`.flow_apply_command WHERE biz_id = ?`,
      [`${p}-1`],
    )) as any;
    expect(row.last_error).toContain(HOSTILE);

    // listed by apply-command scan --json: the line parses back to the value as stored
    const scan = await spawnCli(['--json', 'apply-command', 'scan'], { env: dbs.env() });
    expect(scan.code, scan.stderr).toBeLessThanOrEqual(1);
    expect(scan.stdout).not.toMatch(RAW);
  });

  test('a DEAD outbox row whose last_error holds C1: `deliveries failed --json` writes it escaped, and it parses back whole', async ({
    dbs,
  }) => {
    const key = uniqueConsumerKey('srv');
    const [eventId] = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, schoolId: 5 });
    const lastError = `NACK: ${HOSTILE}\u2028`;
    await dbs.admin.query(
      `UPDATE \`${dbs.fcName}\`.answer_delivery SET state = 'DEAD', retry_count = 8, last_error = ? WHERE event_id = ?`,
      [lastError, eventId],
    );
    const r = await spawnCli(['--json', 'deliveries', 'failed', '--consumer', key, '--school', '5'], {
      env: dbs.env(),
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(RAW);
    const rows = jsonLines(r.stdout).filter((l) => l['type'] === 'row');
    expect(rows.map((l) => l['lastError'])).toEqual([lastError]);
  });
});
