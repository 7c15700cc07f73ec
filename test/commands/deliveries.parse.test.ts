import { describe, expect, it } from 'vitest';
import { createDeliveriesFailedCommand } from '../../src/commands/deliveries/failed.js';
import { createDeliveriesReplayCommand } from '../../src/commands/deliveries/replay.js';
import { createDeliveriesScanCommand } from '../../src/commands/deliveries/scan.js';
import { createDeliveriesSendCommand } from '../../src/commands/deliveries/send.js';
import { UsageError } from '../../src/lib/cli/exit.js';
import { parseError, parseWith } from '../helpers/parse.js';

describe('deliveries send: flags → options', () => {
  it('defaults', async () => {
    const { options } = await parseWith(createDeliveriesSendCommand, ['send']);
    expect(options).toMatchObject({
      batchSize: 500,
      window: 256,
      leaseSeconds: 120,
      confirmTimeoutMs: 15_000,
      holdRecheckSeconds: 600,
      pipeline: 2,
      dryRun: false,
      declare: false,
      allowDefaultVhost: false,
    });
  });
  it('every flag reaches its option (each set to a value no default has), seconds turned into milliseconds', async () => {
    const { options } = await parseWith(createDeliveriesSendCommand, [
      'send',
      '--batch-size',
      '7',
      '--window',
      '3',
      '--max-rows',
      '41',
      '--max-seconds',
      '9',
      '--lease-seconds',
      '77',
      '--confirm-timeout',
      '0.5',
      '--hold-recheck',
      '33',
      '--pipeline',
      '4',
      '--dry-run',
      '--declare',
      '--allow-default-vhost',
      '--backoff-base',
      '11',
      '--backoff-cap',
      '1234',
      '--max-retries',
      '5',
      '--metrics-file',
      'send.prom',
      '--max-load',
      'Threads_running=30',
      '--max-lag',
      '12',
      '--replica-url',
      'mysql://u:p@replica/fc',
    ]);
    expect(options).toEqual({
      batchSize: 7,
      window: 3,
      maxRows: 41,
      maxSeconds: 9,
      leaseSeconds: 77,
      confirmTimeoutMs: 500,
      holdRecheckSeconds: 33,
      retry: { baseSeconds: 11, capSeconds: 1234, maxRetries: 5 },
      dryRun: true,
      pipeline: 4,
      declare: true,
      allowDefaultVhost: true,
      metricsFile: 'send.prom',
      throttle: { maxLoad: [{ variable: 'Threads_running', max: 30 }], maxLagSeconds: 12 },
      service: { follow: false, pollMs: 200, drainMs: 30_000, listen: null, heartbeatSeconds: 5 },
    });
  });
  it('--follow and its flags: no time limit unless given, seconds turned into milliseconds, :PORT on loopback', async () => {
    const { options } = await parseWith(createDeliveriesSendCommand, [
      'send',
      '--follow',
      '--poll-interval',
      '0.05',
      '--drain-seconds',
      '7',
      '--listen',
      ':9464',
      '--heartbeat-seconds',
      '9',
    ]);
    expect(options.maxSeconds).toBe(Infinity);
    expect(options.service).toEqual({
      follow: true,
      pollMs: 50,
      drainMs: 7000,
      listen: { host: '127.0.0.1', port: 9464 },
      heartbeatSeconds: 9,
    });
    expect(
      (
        await parseWith(createDeliveriesSendCommand, [
          'send',
          '--follow',
          '--max-seconds',
          '60',
          '--listen',
          '0.0.0.0:80',
        ])
      ).options,
    ).toMatchObject({ maxSeconds: 60, service: { listen: { host: '0.0.0.0', port: 80 } } });
    expect((await parseWith(createDeliveriesSendCommand, ['send'])).options.maxSeconds).toBe(3600);
  });
  it.each([
    [['--follow', '--dry-run'], '--follow with --dry-run'],
    [['--poll-interval', '1'], '--poll-interval is a --follow option'],
    [['--listen', ':9464'], '--listen is a --follow option'],
    [['--follow', '--listen', '9464'], 'expected [HOST]:PORT'],
    [['--follow', '--listen', ':0'], 'expected [HOST]:PORT'],
    [['--follow', '--poll-interval', '0.04'], 'expected seconds from 0.05'],
  ])('%j is refused (exit 2), the run never called', async (args, says) => {
    await expect(parseWith(createDeliveriesSendCommand, ['send', ...args])).rejects.toThrow(says);
  });
  it('a value out of range is refused before the run', async () => {
    expect(await parseError(createDeliveriesSendCommand, ['send', '--window', '0'])).toMatch(/--window/);
  });
});

const UUID = '5f0a0000-0000-4000-8000-00000000a001';

describe('deliveries replay: flags → options', () => {
  it('defaults, with --from', async () => {
    const { options } = await parseWith(createDeliveriesReplayCommand, [
      'replay',
      '--consumer',
      '100100',
      '--school',
      '5',
      '--from',
      'x.csv',
    ]);
    expect(options).toEqual({
      consumerAppKey: '100100',
      consumerSchoolId: '5',
      from: 'x.csv',
      execute: false,
      concurrency: 4,
      maxSeconds: 3600,
    });
  });
  it('every flag reaches its option; the single request is checked and made canonical', async () => {
    const { options } = await parseWith(createDeliveriesReplayCommand, [
      'replay',
      '--consumer',
      '100100',
      '--school',
      '5',
      '--answer',
      UUID,
      '--expected-revision',
      '007',
      '--operation-id',
      'inc-1',
      '--execute',
      '--concurrency',
      '8',
      '--max-seconds',
      '60',
    ]);
    expect(options).toEqual({
      consumerAppKey: '100100',
      consumerSchoolId: '5',
      single: { answerUuid: UUID, expectedRevision: '7', operationId: 'inc-1' },
      execute: true,
      concurrency: 8,
      maxSeconds: 60,
    });
  });
  it('a consumer key that cannot make a routing key is refused before the run', async () => {
    expect(
      await parseError(createDeliveriesReplayCommand, [
        'replay',
        '--consumer',
        'a.b',
        '--school',
        '5',
        '--from',
        'x.csv',
      ]),
    ).toMatch(/--consumer/);
  });
  it('--failed with --operation-prefix, --state and --reason', async () => {
    const { options } = await parseWith(createDeliveriesReplayCommand, [
      'replay',
      '--consumer',
      '100100',
      '--school',
      '5',
      '--failed',
      '--operation-prefix',
      'INC-42',
      '--state',
      'FAILED',
      '--reason',
      'NACK',
      '--execute',
    ]);
    expect(options).toEqual({
      consumerAppKey: '100100',
      consumerSchoolId: '5',
      failed: { operationPrefix: 'INC-42', filter: { state: 'FAILED', reason: 'NACK' } },
      execute: true,
      concurrency: 4,
      maxSeconds: 3600,
    });
    const bare = await parseWith(createDeliveriesReplayCommand, [
      'replay',
      '--consumer',
      '100100',
      '--school',
      '5',
      '--failed',
      '--operation-prefix',
      'INC-42',
    ]);
    expect(bare.options.failed).toEqual({ operationPrefix: 'INC-42', filter: { state: null, reason: null } });
  });
  it.each([
    [['--failed'], '--failed needs --operation-prefix P'],
    [['--failed', '--operation-prefix', 'P', '--from', 'x.csv'], '--failed cannot be combined'],
    [['--failed', '--operation-prefix', 'P', '--operation-id', 'o'], '--failed cannot be combined'],
    [['--failed', '--operation-prefix', 'P', '--state', 'dead'], '--state "dead" is not FAILED or DEAD'],
    [['--failed', '--operation-prefix', 'P', '--reason', 'GRANT_REVOKED'], 'is not a reason code send writes'],
    [['--from', 'x.csv', '--operation-prefix', 'P'], 'apply only with --failed'],
    [['--from', 'x.csv', '--state', 'DEAD'], 'apply only with --failed'],
  ])('%j is refused (exit 2), the run never called', async (args, says) => {
    await expect(
      parseWith(createDeliveriesReplayCommand, ['replay', '--consumer', '100100', '--school', '5', ...args]),
    ).rejects.toThrow(says);
    await expect(
      parseWith(createDeliveriesReplayCommand, ['replay', '--consumer', '100100', '--school', '5', ...args]),
    ).rejects.toThrow(UsageError);
  });
  it('--from with a single-request flag is refused (exit 2), the run never called', async () => {
    await expect(
      parseWith(createDeliveriesReplayCommand, [
        'replay',
        '--consumer',
        '100100',
        '--school',
        '5',
        '--from',
        'x.csv',
        '--answer',
        UUID,
      ]),
    ).rejects.toThrow(UsageError);
  });
});

describe('deliveries failed: flags → options', () => {
  const ALL = { state: null, reason: null };
  it('defaults', async () => {
    const { options } = await parseWith(createDeliveriesFailedCommand, [
      'failed',
      '--consumer',
      '100100',
      '--school',
      '5',
    ]);
    expect(options).toEqual({
      consumerAppKey: '100100',
      consumerSchoolId: '5',
      start: { page: 1 },
      size: 50,
      filter: ALL,
      format: 'table',
      operationPrefix: null,
    });
  });
  it('every flag reaches its option', async () => {
    const { options } = await parseWith(createDeliveriesFailedCommand, [
      'failed',
      '--consumer',
      'k',
      '--school',
      '9',
      '--page',
      '3',
      '--size',
      '200',
      '--format',
      'csv',
      '--state',
      'DEAD',
      '--reason',
      'NO_ROUTE',
      '--operation-prefix',
      'INC-42',
    ]);
    expect(options).toEqual({
      consumerAppKey: 'k',
      consumerSchoolId: '9',
      start: { page: 3 },
      size: 200,
      filter: { state: 'DEAD', reason: 'NO_ROUTE' },
      format: 'csv',
      operationPrefix: 'INC-42',
    });
  });
  it('--after pages by keyset; jsonl is a format', async () => {
    const { options } = await parseWith(createDeliveriesFailedCommand, [
      'failed',
      '--consumer',
      'k',
      '--school',
      '9',
      '--after',
      '812',
      '--format',
      'jsonl',
    ]);
    expect(options).toMatchObject({ start: { after: '812' }, format: 'jsonl', operationPrefix: null });
  });
  it('a page larger than the largest is refused', async () => {
    expect(
      await parseError(createDeliveriesFailedCommand, ['failed', '--consumer', 'k', '--school', '9', '--size', '201']),
    ).toMatch(/--size/);
  });
  it.each([
    [['--page', '2', '--after', '5'], '--page and --after are two ways to page'],
    [['--after', '-1'], 'is not a row id'],
    [['--state', 'GRANT_REVOKED'], '--state "GRANT_REVOKED" is not FAILED or DEAD'],
    [['--reason', 'nack'], '--reason "nack" is not a reason code'],
    [['--operation-prefix', 'P'], '--operation-prefix applies only with --format csv or jsonl'],
    [['--format', 'json', '--operation-prefix', 'P'], '--operation-prefix applies only with --format csv or jsonl'],
  ])('%j is refused (exit 2), the run never called', async (args, says) => {
    await expect(
      parseWith(createDeliveriesFailedCommand, ['failed', '--consumer', 'k', '--school', '9', ...args]),
    ).rejects.toThrow(says);
    await expect(
      parseWith(createDeliveriesFailedCommand, ['failed', '--consumer', 'k', '--school', '9', ...args]),
    ).rejects.toThrow(UsageError);
  });
  it('an unknown format is refused', async () => {
    expect(
      await parseError(createDeliveriesFailedCommand, [
        'failed',
        '--consumer',
        'k',
        '--school',
        '9',
        '--format',
        'xml',
      ]),
    ).toMatch(/--format/);
  });
});

describe('deliveries scan: flags → options', () => {
  it('defaults', async () => {
    const { options } = await parseWith(createDeliveriesScanCommand, ['scan']);
    expect(options).toEqual({ limit: 20, format: 'table', metricsFile: undefined, failIfDead: false });
  });
  it('every flag reaches its option', async () => {
    const { options } = await parseWith(createDeliveriesScanCommand, [
      'scan',
      '--limit',
      '5',
      '--format',
      'json',
      '--metrics-file',
      '/tmp/s.prom',
      '--fail-if-dead',
    ]);
    expect(options).toEqual({ limit: 5, format: 'json', metricsFile: '/tmp/s.prom', failIfDead: true });
  });
  it('an unknown format is refused', async () => {
    expect(await parseError(createDeliveriesScanCommand, ['scan', '--format', 'xml'])).toMatch(/--format/);
  });
});
