import { describe, expect, it } from 'vitest';
import { createDeliveriesSendCommand } from '../../src/commands/deliveries/send.js';
import { parseError, parseWith } from '../helpers/parse.js';

describe('deliveries send: flags → options', () => {
  it('defaults', async () => {
    const { options } = await parseWith(createDeliveriesSendCommand, ['send']);
    expect(options).toMatchObject({ batchSize: 500, window: 256, leaseSeconds: 120, confirmTimeoutMs: 15_000, holdRecheckSeconds: 600, pipeline: 2, dryRun: false, declare: false, allowDefaultVhost: false });
  });
  it('every flag reaches its option, seconds turned into milliseconds', async () => {
    const { options } = await parseWith(createDeliveriesSendCommand, ['send', '--batch-size', '7', '--window', '3', '--confirm-timeout', '0.5', '--pipeline', '4', '--dry-run', '--declare', '--allow-default-vhost', '--max-seconds', '9']);
    expect(options).toMatchObject({ batchSize: 7, window: 3, confirmTimeoutMs: 500, pipeline: 4, dryRun: true, declare: true, allowDefaultVhost: true, maxSeconds: 9 });
  });
  it('a value out of range is refused before the run', async () => {
    expect(await parseError(createDeliveriesSendCommand, ['send', '--window', '0'])).toMatch(/--window/);
  });
});
