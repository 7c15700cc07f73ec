import { describe, expect, it } from 'vitest';
import { createApplyCommandRequeueCommand } from '../../src/commands/apply-command/requeue.js';
import { createApplyCommandResolveCommand } from '../../src/commands/apply-command/resolve-unknown.js';
import { createApplyCommandScanCommand } from '../../src/commands/apply-command/scan.js';
import { parseError, parseWith } from '../helpers/parse.js';

describe('apply-command resolve-unknown: flags → options', () => {
  it('defaults and units', async () => {
    const { options } = await parseWith(createApplyCommandResolveCommand, ['resolve-unknown']);
    expect(options).toEqual({
      batchSize: 100,
      concurrency: 8,
      maxRows: Number.MAX_SAFE_INTEGER,
      maxSeconds: 600,
      leaseSeconds: 300,
      pendingGraceSeconds: 600,
      retry: { baseSeconds: 20, capSeconds: 3600, maxRetries: 6 },
      requestTimeoutMs: 5000,
      maxConsecutiveErrors: 20,
      dryRun: false,
      metricsFile: undefined,
      service: { follow: false, pollMs: 200, drainMs: 30_000, listen: null, heartbeatSeconds: 5 },
    });
  });
  it('--follow: no time limit unless given, the service flags read', async () => {
    const { options } = await parseWith(createApplyCommandResolveCommand, [
      'resolve-unknown',
      '--follow',
      '--listen',
      ':9465',
      '--poll-interval',
      '1.5',
    ]);
    expect(options).toMatchObject({
      maxSeconds: Infinity,
      service: { follow: true, pollMs: 1500, listen: { host: '127.0.0.1', port: 9465 } },
    });
    await expect(
      parseWith(createApplyCommandResolveCommand, ['resolve-unknown', '--follow', '--dry-run']),
    ).rejects.toThrow('--follow with --dry-run');
    await expect(
      parseWith(createApplyCommandResolveCommand, ['resolve-unknown', '--heartbeat-seconds', '3']),
    ).rejects.toThrow('--heartbeat-seconds is a --follow option');
  });
  it('every flag reaches its option: durations in seconds, the request timeout in milliseconds', async () => {
    const argv = [
      'resolve-unknown',
      '--batch-size',
      '7',
      '--concurrency',
      '3',
      '--max-rows',
      '50',
      '--max-seconds',
      '9',
      '--lease-seconds',
      '60',
      '--pending-grace',
      '2h',
      '--request-timeout',
      '0.5',
      '--max-consecutive-errors',
      '4',
      '--max-retries',
      '3',
      '--dry-run',
      '--metrics-file',
      'm.prom',
    ];
    const { options } = await parseWith(createApplyCommandResolveCommand, argv);
    expect(options).toMatchObject({
      batchSize: 7,
      concurrency: 3,
      maxRows: 50,
      maxSeconds: 9,
      leaseSeconds: 60,
      pendingGraceSeconds: 7200,
      requestTimeoutMs: 500,
      maxConsecutiveErrors: 4,
      retry: { maxRetries: 3 },
      dryRun: true,
      metricsFile: 'm.prom',
    });
  });
  it('a value out of range is refused before the run', async () => {
    expect(await parseError(createApplyCommandResolveCommand, ['resolve-unknown', '--lease-seconds', '5'])).toMatch(
      /--lease-seconds/,
    );
  });
});

describe('apply-command requeue: flags → options', () => {
  it('defaults: a dry run with the default evidence file', async () => {
    const { options } = await parseWith(createApplyCommandRequeueCommand, [
      'requeue',
      '--dead',
      '--operation-id',
      'INC-7',
    ]);
    expect(options).toEqual({
      target: { kind: 'dead', reason: null },
      operationId: 'INC-7',
      execute: false,
      evidencePath: 'requeue-evidence.jsonl',
      concurrency: 4,
      maxSeconds: 3600,
    });
  });
  it('every flag reaches its option; each selection its target', async () => {
    const { options } = await parseWith(createApplyCommandRequeueCommand, [
      'requeue',
      '--biz-type',
      'honor_apply',
      '--biz-id',
      'A-1',
      '--operation-id',
      'op',
      '--evidence',
      'e.jsonl',
      '--execute',
      '--concurrency',
      '2',
      '--max-seconds',
      '30',
    ]);
    expect(options).toEqual({
      target: { kind: 'key', key: { bizType: 'honor_apply', bizId: 'A-1' } },
      operationId: 'op',
      execute: true,
      evidencePath: 'e.jsonl',
      concurrency: 2,
      maxSeconds: 30,
    });
    expect(
      (await parseWith(createApplyCommandRequeueCommand, ['requeue', '--from', '-', '--operation-id', 'op'])).options
        .target,
    ).toEqual({ kind: 'file', path: '-' });
    expect(
      (
        await parseWith(createApplyCommandRequeueCommand, [
          'requeue',
          '--dead',
          '--reason',
          'UNEXPECTED_BRANCH',
          '--operation-id',
          'op',
        ])
      ).options.target,
    ).toEqual({ kind: 'dead', reason: 'UNEXPECTED_BRANCH' });
  });
  it('refused before the run: a value out of range, a missing operation id, a reason code fcctl does not write', async () => {
    expect(
      await parseError(createApplyCommandRequeueCommand, [
        'requeue',
        '--dead',
        '--operation-id',
        'op',
        '--concurrency',
        '0',
      ]),
    ).toMatch(/--concurrency/);
    expect(await parseError(createApplyCommandRequeueCommand, ['requeue', '--dead'])).toMatch(/--operation-id/);
    expect(
      await parseError(createApplyCommandRequeueCommand, [
        'requeue',
        '--dead',
        '--reason',
        'NOPE',
        '--operation-id',
        'op',
      ]),
    ).toMatch(/not a reason code fcctl writes/);
  });
});

describe('apply-command scan: flags → options', () => {
  it('defaults', async () => {
    const { options } = await parseWith(createApplyCommandScanCommand, ['scan']);
    expect(options).toEqual({
      limit: 20,
      format: 'table',
      pendingGraceSeconds: 600,
      metricsFile: undefined,
      failIfDead: false,
    });
  });
  it('every flag reaches its option', async () => {
    const { options } = await parseWith(createApplyCommandScanCommand, [
      'scan',
      '--limit',
      '5',
      '--format',
      'csv',
      '--pending-grace',
      '15m',
      '--metrics-file',
      's.prom',
      '--fail-if-dead',
    ]);
    expect(options).toEqual({
      limit: 5,
      format: 'csv',
      pendingGraceSeconds: 900,
      metricsFile: 's.prom',
      failIfDead: true,
    });
  });
  it('a format it does not know is refused before the run', async () => {
    expect(await parseError(createApplyCommandScanCommand, ['scan', '--format', 'xml'])).toMatch(/--format/);
  });
});
