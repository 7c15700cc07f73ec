import { hostname } from 'node:os';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { openBroker } from '../../src/lib/amqp/connect.js';
import { commanderErrorLine, editDistance, missingOptionsMessage, similarCommands } from '../../src/lib/cli/command.js';
import { batchExitCode } from '../../src/lib/cli/exit.js';
import { Output, SummaryHold } from '../../src/lib/cli/output.js';
import { TS_PATTERN } from '../../src/lib/cli/timestamp.js';
import { UUID_PATTERN } from '../../src/lib/ids.js';
import { testAmqpUrl } from '../helpers/db.js';
import { runCli, spawnCli } from '../helpers/cli.js';

describe('batchExitCode: one rule for every batch command', () => {
  it.each([
    ['all done', { environment: false, failed: 0, interrupted: false }, 0],
    ['an item failed', { environment: false, failed: 2, interrupted: false }, 1],
    ['interrupted, nothing failed ("not all done")', { environment: false, failed: 0, interrupted: true }, 1],
    ['interrupted and an item failed', { environment: false, failed: 1, interrupted: true }, 1],
    [
      'the environment stopped it (broker lost), even interrupted',
      { environment: true, failed: 3, interrupted: true },
      3,
    ],
  ] as const)('%s → %i', (_name, end, code) => {
    expect(batchExitCode(end)).toBe(code);
  });
});

describe('SummaryHold: the summary is printed with the exit code the process ends with', () => {
  const capture = () => {
    const stdout = new PassThrough();
    let text = '';
    stdout.on('data', (c: Buffer) => (text += c.toString()));
    return {
      io: { stdout, stderr: new PassThrough(), stdin: new PassThrough(), interactive: false },
      text: () => text,
    };
  };

  it('prints nothing until released, then the summary with the released code', () => {
    const c = capture();
    const hold = new SummaryHold();
    new Output(c.io, { hold }).summary({ command: 'deliveries send', exitCode: 0, accepted: 500 });
    expect(c.text()).toBe('');
    hold.release(3);
    const line = JSON.parse(c.text()) as Record<string, unknown>;
    expect(line).toEqual({
      ts: expect.stringMatching(TS_PATTERN),
      type: 'summary',
      command: 'deliveries send',
      exitCode: 3,
      accepted: 500,
      runId: expect.stringMatching(UUID_PATTERN),
      host: hostname(),
    });
    // printed when released: the time of the release, first on the line
    expect(Object.keys(line)[0]).toBe('ts');
    hold.release(0);
    expect(c.text().split('\n').filter(Boolean)).toHaveLength(1);
  });

  it('without a hold, the summary is printed at once', () => {
    const c = capture();
    new Output(c.io).summary({ command: 'x', exitCode: 1 });
    expect(JSON.parse(c.text())).toMatchObject({ exitCode: 1 });
  });
});

describe('commander messages', () => {
  it.each([
    ['sned', 'send', 1],
    ['send', 'send', 0],
    ['reconcil', 'reconcile', 1],
    ['abc', 'xyz', 3],
  ] as const)('editDistance(%s, %s) = %i', (a, b, d) => {
    expect(editDistance(a, b)).toBe(d);
  });

  const leaves = [
    { name: 'send', path: 'deliveries send' },
    { name: 'scan', path: 'deliveries scan' },
    { name: 'seed', path: 'dev seed' },
    { name: 'diff', path: 'reconcile diff' },
    { name: 'run', path: 'reconcile run' },
  ];
  it.each([
    ['sned', ['deliveries send']], // a swap beats the equally close `seed`
    ['seeed', ['dev seed']],
    ['sead', ['deliveries send', 'dev seed']], // equally close, neither a swap: both named
    ['dif', ['reconcile diff']],
    ['zzzzzz', []],
    ['x', []],
  ] as const)('similarCommands(%s)', (word, want) => {
    expect(similarCommands(word, leaves)).toEqual(want);
  });

  it.each([
    [['--school <id>'], "error: required option '--school <id>' not specified"],
    [['--school <id>', '--form <uuid>'], "error: required options '--school <id>' and '--form <uuid>' not specified"],
    [['--a <x>', '--b <y>', '--c <z>'], "error: required options '--a <x>', '--b <y>' and '--c <z>' not specified"],
  ] as const)('missingOptionsMessage(%j)', (flags, want) => {
    expect(missingOptionsMessage(flags)).toBe(want);
  });

  it.each([
    ["error: unknown command 'sned'\n(Did you mean send?)\n", "unknown command 'sned' (did you mean send?)"],
    ["error: unknown option '--bogus'\n", "unknown option '--bogus'"],
    [
      "error: unknown option '--batch-siz'\n(Did you mean --batch-size?)\n",
      "unknown option '--batch-siz' (did you mean --batch-size?)",
    ],
  ] as const)('commanderErrorLine(%j)', (text, want) => {
    expect(commanderErrorLine(text)).toBe(want);
  });
});

describe('usage errors on the command line: one line, exit 2, and as helpful as commander can be', () => {
  it.each([
    [['sned'], "fcctl: unknown command 'sned' (did you mean deliveries send?)\n"],
    [['deliveries', 'sned'], "fcctl: unknown command 'sned' (did you mean send?)\n"],
    [['reconcil', 'run'], "fcctl: unknown command 'reconcil' (did you mean reconcile?)\n"],
    [['deliveries', 'send', '--batch-siz', '5'], "fcctl: unknown option '--batch-siz' (did you mean --batch-size?)\n"],
    [['reconcile', 'run'], "fcctl: required option '--out-dir <dir>' not specified\n"],
    [['reconcile', 'run', '--school', '5'], "fcctl: required option '--out-dir <dir>' not specified\n"],
    [
      ['reconcile', 'run', '--out-dir', 'never'],
      'fcctl: give --school and --form (one pair), or --all for every pair\n',
    ],
    [
      ['reconcile', 'run', '--out-dir', 'never', '--school', '5'],
      'fcctl: give --form (one school and form), or --all for every pair\n',
    ],
    [
      ['reconcile', 'run', '--school', '5', '--form', 'f0000000-0000-4000-8000-000000000000'],
      "fcctl: required option '--out-dir <dir>' not specified\n",
    ],
    [
      ['manifest', 'scan', '--side', 'sh'],
      "fcctl: required options '--school <id>', '--form <uuid>' and '--out <file.jsonl>' not specified\n",
    ],
  ] as const)('fcctl %j', async (argv, stderr) => {
    const r = await runCli(argv);
    expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({ code: 2, stdout: '', stderr });
  });

  it('a real process prints the same line (bin/fcctl)', async () => {
    const r = await spawnCli(['sned']);
    expect({ code: r.code, stderr: r.stderr }).toEqual({
      code: 2,
      stderr: "fcctl: unknown command 'sned' (did you mean deliveries send?)\n",
    });
  });

  it.each([
    ['deliveries', 'send'],
    ['apply-command', 'resolve-unknown'],
  ])('%s %s --help: --max-rows defaults to "no limit", not 2^53 - 1', async (...cmd) => {
    const r = await runCli([...cmd, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--max-rows <n>\s+stop after claiming this many rows\s+\(default:\s+no\s+limit\)/);
    expect(r.stdout).not.toContain(String(Number.MAX_SAFE_INTEGER));
  });

  it('reconcile run --help: --allow-empty has one default text (was "(default: exit 1 with a warning) (default: false)")', async () => {
    const r = await runCli(['reconcile', 'run', '--help']);
    expect(r.code).toBe(0);
    const help = r.stdout.replace(/\s+/g, ' ');
    expect(help).toMatch(/--allow-empty exit 0 even when .*\(default: exit 1 with a warning\) --metrics-file/);
    expect(help).not.toMatch(/with a warning\) \(default: false\)/);
  });
});

describe('a vhost the broker refuses', () => {
  it('is named, with the user, the password masked (not amqplib\'s "Expected ConnectionOpenOk")', async () => {
    const url = new URL(testAmqpUrl());
    url.pathname = '/fcctl-no-such-vhost';
    const password = decodeURIComponent(url.password);
    const err = await openBroker(url.toString()).then(
      () => null,
      (e: unknown) => e as Error & { exitCode: number },
    );
    expect(err).not.toBeNull();
    expect(err!.exitCode).toBe(3);
    expect(err!.message).toBe(
      `cannot connect to RabbitMQ at amqp://${url.username}:***@${url.host}/fcctl-no-such-vhost: vhost "fcctl-no-such-vhost" not found or not permitted for user "${decodeURIComponent(url.username)}"`,
    );
    if (password.length >= 3) expect(err!.message).not.toContain(password);
  });
});
