import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import amqp from 'amqplib';
import { describe, expect, it } from 'vitest';
import { summaryRows, summaryValueText } from '../../src/lib/cli/summary-text.js';
import { DEFAULT_PUBLISHER, defaultConsumerKeys } from '../../src/lib/dev/seed.js';
import { runCli } from '../helpers/cli.js';
import { servicesTest } from '../helpers/services.js';
import { freshVhost } from '../helpers/vhost.js';

// Issue 36 §16: a command's summary on a terminal is for a person — durations also in days and
// hours (the seconds kept), maps as `A 1, B 2`, nothing as `none`, never a JSON object. JSON lines
// (off a terminal, --json) keep the numbers and the objects as they are.

const SECRET = 'terminal-summary-secret';
const CONSUMERS = defaultConsumerKeys(3, DEFAULT_PUBLISHER.appKey);
const test = servicesTest({ prefix: 'ttysum', flowApps: { [DEFAULT_PUBLISHER.appKey]: SECRET } });

/** The summary block of a terminal output: from `summary` to the end; asserted free of JSON. */
function terminalSummary(stdout: string, command: string): string {
  const at = stdout.indexOf(`${command}\nsummary`);
  expect(at, `no summary of ${command} in:\n${stdout}`).toBeGreaterThanOrEqual(0);
  const block = stdout.slice(at);
  // no JSON object or list, filled or empty, anywhere in it
  expect(block, block).not.toMatch(/[{[]["{\]}]|\{\}|\[\]/);
  return block;
}

describe('summaryValueText and summaryRows (pure)', () => {
  it.each([
    ['oldestPendingAgeSeconds', 3890175, '45d00h36m (3890175 s)'],
    ['seconds', 7260.4, '2h01m (7260.4 s)'],
    ['seconds', 0.6, '0.6'],
    ['throttledSeconds', 0, '0'],
    ['finishedAtSeconds', 1764979200, '1764979200'],
    ['oldestUnknownAgeSeconds', null, 'none'],
    ['failedByReason', { NACK: 2, TIMEOUT: 0, INVALID_ROUTING_KEY: 3 }, 'NACK 2, INVALID_ROUTING_KEY 3'],
    ['releasedByReason', {}, 'none'],
    ['pruned', { nights: 0, ledgerRows: 0 }, 'none'],
    ['sides', ['fc', 'sh'], 'fc, sh'],
    [
      'pairs',
      [
        { school: 5, form: 'f1' },
        { school: 6, form: 'f2' },
      ],
      'school 5 form f1; school 6 form f2',
    ],
    ['stalls', { oldestSeconds: 120, rows: 3 }, 'oldestSeconds 2m00s (120 s), rows 3'],
    // a key from elsewhere (a flow center's branch) that would read as other members: quoted
    ['branches', { 'CREATED 40, IDEMPOTENT': 1, CREATED: 2 }, '"CREATED 40, IDEMPOTENT" 1, CREATED 2'],
    ['branches', { 'x\u001b[2J': 1 }, '"x\\u001b[2J" 1'],
  ])('%s %j → %s', (key, value, text) => {
    expect(summaryValueText(key, value)).toBe(text);
  });

  it('a member holding maps or lists is a row per member, its key dotted', () => {
    expect(summaryRows({ exitCode: 0, run: { pairs: 6, byState: { DONE: 6, FAILED: 0 }, failed: [] } })).toEqual([
      { key: 'exitCode', value: '0' },
      { key: 'run.pairs', value: '6' },
      { key: 'run.byState', value: 'DONE 6' },
      { key: 'run.failed', value: 'none' },
    ]);
  });
});

describe('every command family prints its summary on a terminal for a person', () => {
  test('deliveries, reconcile, manifest, projection, retire-absent, apply-command, db', async ({
    dbs,
    tmp,
    flowCenter,
  }) => {
    const vhost = freshVhost();
    try {
      const env = {
        ...dbs.env(),
        FCCTL_AMQP_URL: vhost.url,
        FCCTL_FLOW_URL: flowCenter.url,
        FCCTL_APP_KEY: DEFAULT_PUBLISHER.appKey,
        FCCTL_APP_CODE: DEFAULT_PUBLISHER.appCode,
        FCCTL_APP_SECRET: SECRET,
      };
      expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
      const seed = await runCli(
        [
          '--json',
          'dev',
          'seed',
          '--answers',
          '200',
          '--schools',
          '2',
          '--include-faults',
          '--consumer-keys',
          CONSUMERS.join(','),
        ],
        { env },
      );
      expect(seed.code, seed.stderr).toBe(0);
      await bindConsumers(vhost.url);
      const tty = async (argv: string[], code: number) => {
        const r = await runCli(argv, { env, tty: true });
        expect(r.code, `${argv.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(code);
        return r.stdout;
      };

      // deliveries: the seeded rows are 45 days old; the faults fail their checks
      const scan = terminalSummary(await tty(['deliveries', 'scan', '--limit', '5'], 0), 'deliveries scan');
      expect(scan).toMatch(/^oldestPendingAgeSeconds +\d+d\d\dh\d\dm \(\d+ s\)$/m);
      // JSON lines keep the number
      const json = await runCli(['--json', 'deliveries', 'scan'], { env });
      const line = JSON.parse(json.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
      expect(line['oldestPendingAgeSeconds']).toBeGreaterThan(86_400);
      const send = terminalSummary(await tty(['deliveries', 'send'], 1), 'deliveries send');
      expect(send).toMatch(/^failedByReason +([A-Z_]+ \d+)(, [A-Z_]+ \d+)*$/m);
      expect(send).toMatch(/^releasedByReason +none$/m);

      // reconcile --all: its nested run counts a row each
      const all = terminalSummary(
        await tty(['reconcile', 'run', '--all', '--consumer', CONSUMERS[0]!, '--out-dir', join(tmp, 'all')], 0),
        'reconcile run',
      );
      expect(all).toMatch(/^byResult +done \d+$/m);
      expect(all).toMatch(/^run\.byState +DONE \d+$/m);
      expect(all).toMatch(/^pruned +none$/m);
      const school = readdirSync(join(tmp, 'all')).find((d) => /^\d+$/.test(d))!;
      const forms = readdirSync(join(tmp, 'all', school));
      const form = forms.find((f) => existsSync(join(tmp, 'all', school, f, 'retire-candidates.jsonl'))) ?? forms[0]!;
      const pair = join(tmp, 'all', school, form);

      terminalSummary(
        await tty(['reconcile', 'run', '--school', school, '--form', form, '--out-dir', join(tmp, 'one')], 0),
        'reconcile run',
      );
      const failed = terminalSummary(
        await tty(['deliveries', 'failed', '--consumer', CONSUMERS[0]!, '--school', school], 0),
        'deliveries failed',
      );
      expect(failed).toMatch(/^nextCursor +none$/m);
      terminalSummary(
        await tty(
          [
            'deliveries',
            'replay',
            '--failed',
            '--operation-prefix',
            'tty',
            '--consumer',
            CONSUMERS[0]!,
            '--school',
            school,
          ],
          0,
        ),
        'deliveries replay',
      );
      const manifest = terminalSummary(
        await tty(
          ['manifest', 'scan', '--side', 'fc', '--school', school, '--form', form, '--out', join(tmp, 'm.jsonl')],
          0,
        ),
        'manifest scan',
      );
      expect(manifest).toMatch(/^shard +none$/m);

      const repair = terminalSummary(
        await tty(
          [
            'projection',
            'repair-authoritative',
            '--plan',
            join(pair, 'repair-plan.jsonl'),
            '--consumer',
            CONSUMERS[0]!,
            '--proof-id',
            'tty',
          ],
          1,
        ),
        'projection repair-authoritative',
      );
      expect(repair).toMatch(/^byCode +([A-Z_]+ \d+)(, [A-Z_]+ \d+)*$/m);
      const proof = join(tmp, 'proof.json');
      terminalSummary(
        await tty(
          [
            'retire-absent',
            'prove',
            '--candidates',
            join(pair, 'retire-candidates.jsonl'),
            '--fc-manifest',
            join(pair, 'fc-manifest.jsonl'),
            '--out',
            proof,
          ],
          0,
        ),
        'retire-absent prove',
      );
      terminalSummary(await tty(['retire-absent', '--proof', proof], 0), 'retire-absent');

      const commands = terminalSummary(await tty(['apply-command', 'scan'], 0), 'apply-command scan');
      expect(commands).toMatch(/^oldestUnknownAgeSeconds +none$/m);
      const resolve = terminalSummary(
        await tty(['apply-command', 'resolve-unknown'], 0),
        'apply-command resolve-unknown',
      );
      expect(resolve).toMatch(/^branches +none$/m);

      const check = terminalSummary(await tty(['db', 'check'], 0), 'db check');
      expect(check).toMatch(/^ok +true$/m);
    } finally {
      vhost.drop();
    }
  }, 120_000);
});

/** The consumers' side: the delivery exchange and one queue per seeded consumer key. */
async function bindConsumers(url: string): Promise<void> {
  const conn = await amqp.connect(url);
  const ch = await conn.createChannel();
  await ch.assertExchange('fc.answer.delivery.v2', 'topic', { durable: true });
  for (const key of CONSUMERS) {
    await ch.assertQueue(`tty.consumer.${key}`, { durable: false, autoDelete: false });
    await ch.bindQueue(`tty.consumer.${key}`, 'fc.answer.delivery.v2', `fc.snapshot.v2.${key}.*`);
  }
  await conn.close();
}
