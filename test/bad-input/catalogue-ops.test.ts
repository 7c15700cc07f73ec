import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { canonicalize } from '../../src/lib/canon/index.js';
import { insertCommands, uniquePrefix } from '../helpers/apply-commands.js';
import { expectRefused, type RefusalCase, SH_TABLES_FOR_CHECKSUM } from '../helpers/bad-input.js';
import { checksumTables, FC_TABLES } from '../helpers/checksum.js';
import { FCCTL_BIN, jsonLines, runCli } from '../helpers/cli.js';
import { testAmqpUrl, type TestDatabases } from '../helpers/db.js';
import {
  ensureExchange,
  insertDeliveries,
  insertGrant,
  insertRegistry,
  PUBLISHER,
  snapshotOf,
} from '../helpers/deliveries.js';
import { recordTotals } from '../helpers/faults.js';
import { managementUrlAs } from '../helpers/management.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'badops', init: 'all' });
/** empty databases of their own, for `db init --dev` on each state a database can be in */
const devmarkTest = servicesTest({ prefix: 'devmark' });

/**
 * The bad-input catalogue, part A: the global options and `config show`, `db init`, `db check`,
 * `doctor`, `dev seed`, `canon *`, `deliveries scan|send|replay|failed`, `apply-command
 * scan|resolve-unknown`. Every case runs against one shared pair of databases holding rows on both
 * sides, and asserts the exit code, one stderr line naming the problem and unchanged tables.
 * Options are described as data (COMMANDS); the generic cases (unknown option, missing value,
 * bad numbers, bad choices, missing required options, extra arguments) are generated from it.
 */

const FORM = '0f0e0d0c-0000-4000-8000-000000000001';
const KEY = '100100';
/** the answer of KEY/school 5's PENDING row, which replay cases aim at */
const ANSWER = '5a1e0000-0000-4000-8000-00000000000a';
const dir = mkdtempSync(join(tmpdir(), 'fcctl-bad-ops-'));
const file = (name: string) => join(dir, name);

// --- values -------------------------------------------------------------------------------------

const DROP = "'; DROP TABLE answer; --";
/** SQL metacharacters: quoting, LIKE wildcards, escape, NUL */
const SQL_META = [DROP, '%', '_', '\\', 'a\u0000b'];
/** routing-key wildcards and the separator */
const WILDCARDS = ['*', '#', 'a.b'];
/** bytes 0xff 0xfe as argv carries them when they are not UTF-8 (read as latin1) */
const NON_UTF8 = Buffer.from([0x61, 0xff, 0xfe, 0x62]).toString('latin1');
const STRINGS = [...SQL_META, ...WILDCARDS, NON_UTF8, ''];
const BAD_INTS = ['abc', '-1', '1e309', '99999999999999999999', '', '1.5', '0x10', ' '];
const BAD_SECONDS = ['abc', '-1', '1e309', '', 'NaN', 'Infinity', '1,5', '0x10'];
const BAD_DURATIONS = ['abc', '-1', '10x', '1e3', '', '1.5m', '9999999999d'];
const show = (v: string) => JSON.stringify(v);
const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// --- the commands' options, as data ---------------------------------------------------------------

interface CommandSpec {
  readonly cmd: readonly string[];
  /** what makes a run valid (required options, a file argument) */
  readonly base: readonly string[];
  /** [option, min, max] of whole-number options */
  readonly ints?: ReadonlyArray<readonly [string, number, number]>;
  readonly seconds?: ReadonlyArray<readonly [string, number, number]>;
  readonly durations?: ReadonlyArray<readonly [string, number, number]>;
  readonly choices?: ReadonlyArray<readonly [string, readonly string[]]>;
  /** options that must be given (each left out in turn from `base`) */
  readonly required?: readonly string[];
  /** other options that take a value */
  readonly valued?: readonly string[];
  /** takes no positional argument: one more is refused */
  readonly noArguments?: boolean;
}

const GOOD_JSON = file('good.json');
const GOOD_VECTORS = file('good-vectors.json');
const GOOD_ENVELOPE = file('good-envelope.json');
const SINGLE_REPLAY = [
  '--consumer',
  KEY,
  '--school',
  '5',
  '--answer',
  ANSWER,
  '--expected-revision',
  '1',
  '--operation-id',
  'op-bad-input',
];

const COMMANDS: readonly CommandSpec[] = [
  { cmd: ['config', 'show'], base: [], noArguments: true },
  {
    cmd: ['db', 'init'],
    base: ['--side', 'fc'],
    choices: [['--side', ['fc', 'sh', 'all']]],
    required: ['--side'],
    noArguments: true,
  },
  { cmd: ['db', 'check'], base: [], choices: [['--side', ['fc', 'sh', 'all']]], noArguments: true },
  { cmd: ['doctor'], base: [], valued: ['--consumer-queue', '--consumer-user'], noArguments: true },
  {
    cmd: ['dev', 'seed'],
    base: [],
    ints: [
      ['--answers', 0, 1_000_000],
      ['--consumers', 1, 1000],
      ['--schools', 1, 10_000],
      ['--snapshot-bytes', 0, 1024 * 1024],
      ['--seed', 0, 2 ** 31 - 1],
    ],
    valued: ['--consumer-keys'],
    noArguments: true,
  },
  {
    cmd: ['canon', 'hash'],
    base: [GOOD_JSON],
    ints: [['--max-line-bytes', 1, 512 * 1024 * 1024]],
    choices: [['--number-mode', ['exact', 'double']]],
  },
  { cmd: ['canon', 'verify'], base: [GOOD_VECTORS], choices: [['--number-mode', ['exact', 'double']]] },
  { cmd: ['canon', 'check-envelope'], base: [GOOD_ENVELOPE] },
  {
    cmd: ['deliveries', 'scan'],
    base: [],
    ints: [['--limit', 1, 10_000]],
    choices: [['--format', ['table', 'json', 'csv']]],
    valued: ['--metrics-file'],
    noArguments: true,
  },
  {
    cmd: ['deliveries', 'send'],
    base: [],
    ints: [
      ['--batch-size', 1, 5000],
      ['--window', 1, 10_000],
      ['--max-rows', 1, Number.MAX_SAFE_INTEGER],
      ['--lease-seconds', 5, 86_400],
      ['--hold-recheck', 1, 86_400],
      ['--pipeline', 1, 8],
      ['--backoff-base', 1, 86_400],
      ['--backoff-cap', 1, 7 * 86_400],
      ['--max-retries', 1, 100],
      ['--max-lag', 0, 86_400],
    ],
    seconds: [
      ['--max-seconds', 1, 86_400],
      ['--confirm-timeout', 0.05, 600],
    ],
    valued: ['--metrics-file', '--pause-file', '--replica-url'],
    noArguments: true,
  },
  {
    cmd: ['deliveries', 'replay'],
    base: SINGLE_REPLAY,
    ints: [['--concurrency', 1, 32]],
    seconds: [['--max-seconds', 1, 86_400]],
    required: ['--consumer', '--school'],
    valued: ['--answer', '--expected-revision', '--operation-id', '--from'],
    noArguments: true,
  },
  {
    cmd: ['deliveries', 'failed'],
    base: ['--consumer', KEY, '--school', '5'],
    ints: [
      ['--page', 1, 1_000_000],
      ['--size', 1, 200],
    ],
    choices: [['--format', ['table', 'json', 'csv', 'jsonl']]],
    required: ['--consumer', '--school'],
    valued: ['--state', '--reason', '--after', '--operation-prefix'],
    noArguments: true,
  },
  {
    cmd: ['pause'],
    base: ['deliveries', 'send', '--reason', 'bad-input catalogue'],
    choices: [['--format', ['table', 'json', 'csv']]],
    valued: ['--reason', '--until'],
  },
  {
    cmd: ['resume'],
    base: ['deliveries', 'send'],
    valued: ['--reason'],
  },
  {
    cmd: ['apply-command', 'scan'],
    base: [],
    ints: [['--limit', 1, 10_000]],
    durations: [['--pending-grace', 60, 30 * 86_400]],
    choices: [['--format', ['table', 'json', 'csv']]],
    valued: ['--metrics-file'],
    noArguments: true,
  },
  {
    cmd: ['apply-command', 'resolve-unknown'],
    base: ['--dry-run'],
    ints: [
      ['--batch-size', 1, 1000],
      ['--concurrency', 1, 256],
      ['--max-rows', 1, Number.MAX_SAFE_INTEGER],
      ['--lease-seconds', 10, 86_400],
      ['--max-consecutive-errors', 1, 1_000_000],
      ['--backoff-base', 1, 86_400],
      ['--backoff-cap', 1, 7 * 86_400],
      ['--max-retries', 1, 100],
    ],
    seconds: [
      ['--max-seconds', 1, 86_400],
      ['--request-timeout', 0.05, 120],
    ],
    durations: [['--pending-grace', 60, 30 * 86_400]],
    valued: ['--metrics-file', '--pause-file'],
    noArguments: true,
  },
  {
    cmd: ['apply-command', 'requeue'],
    base: ['--dead', '--operation-id', 'op-bad-input', '--execute', '--evidence', file('requeue-evidence.jsonl')],
    ints: [['--concurrency', 1, 32]],
    seconds: [['--max-seconds', 1, 86_400]],
    required: ['--operation-id'],
    valued: ['--biz-type', '--biz-id', '--from', '--reason', '--evidence'],
    noArguments: true,
  },
];

/** `base` with one option (and its value) left out. */
function without(base: readonly string[], option: string): string[] {
  const i = base.indexOf(option);
  return [...base.slice(0, i), ...base.slice(i + 2)];
}

/** A number just outside [min, max], below and above (none below 0: that is `-1` already). */
function outOfRange(min: number, max: number, step: number): string[] {
  return [
    ...(min - step >= 0 ? [String(Math.round((min - step) * 1000) / 1000)] : []),
    ...(max < Number.MAX_SAFE_INTEGER ? [String(max + step)] : ['9007199254740992']),
  ];
}

/** The generic cases of one command: every option given something it must refuse. */
function genericCases(spec: CommandSpec): RefusalCase[] {
  const name = spec.cmd.join(' ');
  const run = (...extra: string[]) => [...spec.cmd, ...spec.base, ...extra];
  const cases: RefusalCase[] = [
    { name: `${name}: unknown option --bogus`, argv: run('--bogus'), says: /unknown option '--bogus'/ },
    { name: `${name}: unknown short option -z`, argv: run('-z'), says: /unknown option '-z'/ },
    { name: `${name}: unknown option with SQL in its name`, argv: run(`--${DROP}`), says: /unknown option/ },
  ];
  if (spec.noArguments)
    cases.push({ name: `${name}: an extra argument`, argv: run('extra'), says: /too many arguments/ });
  for (const option of spec.required ?? []) {
    cases.push({
      name: `${name}: ${option} missing`,
      argv: [...spec.cmd, ...without(spec.base, option)],
      says: new RegExp(`required option '${escapeRegex(option)}`),
    });
  }
  const valued = [
    ...(spec.ints ?? []),
    ...(spec.seconds ?? []),
    ...(spec.durations ?? []),
    ...(spec.choices ?? []),
  ].map(([o]) => o);
  for (const option of new Set([...valued, ...(spec.valued ?? []), ...(spec.required ?? [])])) {
    // the option last, its value missing (a required one taken out of base first)
    const rest = spec.required?.includes(option) ? without(spec.base, option) : spec.base;
    cases.push({
      name: `${name}: ${option} without its value`,
      argv: [...spec.cmd, ...rest, option],
      says: new RegExp(`option '${escapeRegex(option)} <[a-z]+>' argument missing`),
    });
  }
  const bad = (option: string, values: readonly string[]) =>
    values.map(
      (v): RefusalCase => ({
        name: `${name}: ${option} ${show(v)}`,
        argv: run(option, v),
        says: new RegExp(`option '${escapeRegex(option)} <[a-z]+>' argument .* is invalid`),
      }),
    );
  for (const [o, min, max] of spec.ints ?? []) cases.push(...bad(o, [...BAD_INTS, ...outOfRange(min, max, 1)]));
  for (const [o, min, max] of spec.seconds ?? [])
    cases.push(...bad(o, [...BAD_SECONDS, ...outOfRange(min, max, min < 1 ? 0.01 : 1)]));
  for (const [o, min, max] of spec.durations ?? [])
    cases.push(...bad(o, [...BAD_DURATIONS, `${min - 1}s`, `${max / 86_400 + 1}d`]));
  for (const [o, valid] of spec.choices ?? [])
    cases.push(...bad(o, [...STRINGS, valid[0]!.toUpperCase(), ` ${valid[0]}`]));
  return cases;
}

// --- fixture files ----------------------------------------------------------------------------------

const HUGE_BYTES = 50 * 1024 * 1024;
const DEPTH = 100_000;
const deep = '['.repeat(DEPTH) + ']'.repeat(DEPTH);
const latin1 = (text: string) => Buffer.from(text, 'latin1');

/** A valid v2 envelope body (SPEC §4), as members, so cases can change one. */
function envelope(): Record<string, unknown> {
  const snapshot = snapshotOf(5);
  const canon = canonicalize(snapshot);
  if (!canon.ok) throw new Error('bad test snapshot');
  return {
    protocolVersion: 'fc.answer.snapshot.v2',
    eventId: '0b0e0000-0000-4000-8000-000000000001',
    eventType: 'created',
    sourceAppKey: PUBLISHER.appKey,
    consumerAppKey: KEY,
    consumerSchoolId: 5,
    grantVersion: 1,
    formUuid: FORM,
    formVersion: 3,
    answerUuid: ANSWER,
    answerRevision: 1,
    isDeleted: false,
    contentHash: canon.hash,
    occurredAt: '2026-10-21T10:05:00',
    snapshot: JSON.parse(snapshot) as unknown,
  };
}
const withMembers = (change: Record<string, unknown>, drop: readonly string[] = []) =>
  JSON.stringify(Object.fromEntries(Object.entries({ ...envelope(), ...change }).filter(([k]) => !drop.includes(k))));

const REPLAY_HEADER = 'answerUuid,expectedRevision,operationId\n';
const csvRow = (op: string, uuid = ANSWER, rev = '1') => `${uuid},${rev},${op}\n`;

const FILES: Record<string, string | Buffer> = {
  'good.json': '{"b":1,"a":[true,null,"x"]}',
  'good-vectors.json': JSON.stringify({
    spec: 'fc.canon.v1',
    vectors: [{ name: 'one', input: '{"b":1,"a":2}', canonical: '{"a":2,"b":1}' }],
  }),
  'good-envelope.json': JSON.stringify(envelope()),
  'huge.json': `{"a":"${'x'.repeat(HUGE_BYTES)}`,
  'deep.json': deep,
  'latin1.json': latin1('{"name":"\u00ff\u00fe"}'),
  empty: '',
  'config-malformed.json': '{"fcDatabaseUrl": ',
  'config-array.json': '[]',
  'config-null.json': 'null',
  'config-string.json': '"mysql://x@h/d"',
  'config-unknown.json': '{"appKey":"100021","colour":"blue"}',
  'config-unknown-sql.json': JSON.stringify({ [DROP]: 'x' }),
  'config-number.json': '{"appKey":100021}',
  'config-bool.json': '{"appCode":true}',
  'config-null-value.json': '{"fcDatabaseUrl":null}',
  'config-object.json': '{"amqpUrl":{"host":"x"}}',
  'config-zone-number.json': '{"serviceTimeZone":8}',
  'config-zone-bad.json': '{"serviceTimeZone":"Mars/Olympus"}',
  'zone-bad': 'CST\n',
  'config-secret-file.json': JSON.stringify({ appSecretFile: file('absent-secret') }),
  'config-latin1.json': latin1('{"appKey":"a\u00ff"}'),
  'config-deep.json': `{"appKey":${deep}}`,
  'config-trailing.json': '{"appKey":"100021"} x',
  'canon-trailing-comma.json': '{"a":1,}',
  'canon-duplicate.json': '{"a":1,"a":2}',
  'canon-nan.json': '{"a":NaN}',
  'canon-comment.json': '{"a":1 /* no */}',
  'canon-trailing-data.json': '{"a":1} {"b":2}',
  'canon-long-number.json': `[${'9'.repeat(1001)}]`,
  'canon-deep-1001.json': '['.repeat(1001) + ']'.repeat(1001),
  'lines-one-bad.jsonl': '{"a":1}\n{"a":1,}\n[2]\n',
  'vectors-array.json': '[]',
  'vectors-spec.json': JSON.stringify({
    spec: 'fc.canon.v2',
    vectors: [{ name: 'x', input: '1', hash: 'a'.repeat(64) }],
  }),
  'vectors-empty.json': JSON.stringify({ spec: 'fc.canon.v1', vectors: [] }),
  'vectors-no-name.json': JSON.stringify({ spec: 'fc.canon.v1', vectors: [{ input: '1', canonical: '1' }] }),
  'vectors-bad-hash.json': JSON.stringify({ spec: 'fc.canon.v1', vectors: [{ name: 'x', input: '1', hash: 'ABC' }] }),
  'vectors-sql-code.json': JSON.stringify({
    spec: 'fc.canon.v1',
    vectors: [{ name: 'x', input: '1', error: true, errorCode: DROP }],
  }),
  'vectors-deep.json': JSON.stringify({ spec: 'fc.canon.v1', vectors: [] }).replace('[]', deep),
  'envelope-deep-member.json': withMembers({ snapshot: 0 }).replace('"snapshot":0', `"snapshot":${deep}`),
  'envelope-array.json': '[1]',
  'envelope-missing.json': withMembers({}, ['snapshot']),
  'envelope-extra.json': withMembers({ [DROP]: 1 }),
  'envelope-type.json': withMembers({ answerRevision: 'one' }),
  'envelope-hash.json': withMembers({ contentHash: 'f'.repeat(64) }),
  'envelope-dotted-key.json': withMembers({ consumerAppKey: 'a.b' }),
  'envelope-wild-key.json': withMembers({ consumerAppKey: '*' }),
  'envelope-school-0.json': withMembers({ consumerSchoolId: 0 }),
  'envelope-duplicate.json': withMembers({}).replace('{', '{"eventType":"created",'),
  'replay-header-only.csv': REPLAY_HEADER,
  'replay-no-column.csv': `answerUuid,operationId\n${ANSWER},op-1\n`,
  'replay-quote.csv': `${REPLAY_HEADER}${ANSWER},1,op"x\n`,
  'replay-open-quote.csv': `${REPLAY_HEADER}${ANSWER},1,"op-1\n`,
  'replay-fields.csv': `${REPLAY_HEADER}${ANSWER},1\n`,
  'replay-uuid.csv': REPLAY_HEADER + csvRow('op-1', DROP.replace(/[',]/g, '')),
  'replay-revision.csv': REPLAY_HEADER + csvRow('op-1', ANSWER, '-1'),
  'replay-revision-big.csv': REPLAY_HEADER + csvRow('op-1', ANSWER, '99999999999999999999'),
  'replay-op-empty.csv': REPLAY_HEADER + csvRow(''),
  'replay-op-long.csv': REPLAY_HEADER + csvRow('o'.repeat(129)),
  'replay-op-nul.csv': REPLAY_HEADER + csvRow('op\u0000x'),
  'replay-op-twice.csv': REPLAY_HEADER + csvRow('op-1') + csvRow('op-1', ANSWER.replace(/a$/, 'b')),
  'replay-latin1.csv': latin1(REPLAY_HEADER + csvRow('op-\u00ff')),
  'replay-bad-line.jsonl': `${[1, 2, 3]
    .map((i) => JSON.stringify({ answerUuid: ANSWER, expectedRevision: i, operationId: `op-${i}` }))
    .join('\n')
    .replace('"op-2"}', '"op-2",}')}\n`,
  'replay-not-object.jsonl': `{"answerUuid":"${ANSWER}","expectedRevision":1,"operationId":"op-1"}\n[1]\n`,
  'replay-fraction.jsonl': `{"answerUuid":"${ANSWER}","expectedRevision":1.5,"operationId":"op-1"}\n`,
  'replay-too-many.csv': REPLAY_HEADER + Array.from({ length: 100_001 }, (_, i) => csvRow(`op-${i}`)).join(''),
  'requeue-header-only.csv': 'biz_type,biz_id\n',
  'requeue-no-column.csv': 'biz_type,bizid\nhonor_apply,A-1\n',
  'requeue-header-twice.csv': 'biz_type,biz_id,biz_id\nhonor_apply,A-1,A-2\n',
  'requeue-quote.csv': 'biz_type,biz_id\nhonor_apply,A"1\n',
  'requeue-open-quote.csv': 'biz_type,biz_id\nhonor_apply,"A-1\n',
  'requeue-fields.csv': 'biz_type,biz_id\nhonor_apply\n',
  'requeue-empty-id.csv': 'biz_type,biz_id\nhonor_apply,\n',
  'requeue-long-id.csv': `biz_type,biz_id\nhonor_apply,${'i'.repeat(65)}\n`,
  'requeue-long-type.csv': `biz_type,biz_id\n${'t'.repeat(33)},A-1\n`,
  'requeue-space.csv': 'biz_type,biz_id\nhonor_apply,A-1 \n',
  'requeue-nul.csv': 'biz_type,biz_id\nhonor_apply,A\u00001\n',
  'requeue-twice.csv': 'biz_type,biz_id\nhonor_apply,A-1\nhonor_apply,A-2\nhonor_apply,A-1\n',
  'requeue-latin1.csv': latin1('biz_type,biz_id\nhonor_apply,A-\u00ff\n'),
  'requeue-bad-line.jsonl': '{"bizType":"honor_apply","bizId":"A-1"}\n{"bizType":"honor_apply",}\n',
  'requeue-not-object.jsonl': '{"bizType":"honor_apply","bizId":"A-1"}\n["honor_apply","A-2"]\n',
  'requeue-number.jsonl': '{"bizType":"honor_apply","bizId":7}\n',
  'requeue-snake.jsonl': '{"biz_type":"honor_apply","biz_id":"A-1"}\n',
  'requeue-too-many.csv': `biz_type,biz_id\n${Array.from({ length: 100_001 }, (_, i) => `honor_apply,A-${i}\n`).join('')}`,
};

// --- cases written out by hand ------------------------------------------------------------------

const configCase = (name: string, config: string, says: RegExp): RefusalCase => ({
  name: `--config: ${name}`,
  argv: ['--config', config, 'config', 'show'],
  says,
});

const GLOBAL_CASES: RefusalCase[] = [
  configCase('a file that does not exist', file('absent.json'), /--config: cannot read .*absent\.json: ENOENT/),
  configCase('a directory', dir, /--config: cannot read .*: EISDIR/),
  configCase('an empty file', file('empty'), /is empty/),
  configCase('malformed JSON', file('config-malformed.json'), /not valid JSON/),
  configCase('trailing data after the object', file('config-trailing.json'), /not valid JSON/),
  configCase('a 50 MB unterminated line', file('huge.json'), /not valid JSON/),
  configCase('an array', file('config-array.json'), /must hold a JSON object/),
  configCase('null', file('config-null.json'), /must hold a JSON object/),
  configCase('a string', file('config-string.json'), /must hold a JSON object/),
  configCase('an unknown key', file('config-unknown.json'), /unknown key "colour"/),
  configCase('an unknown key holding SQL', file('config-unknown-sql.json'), /unknown key/),
  configCase('a number where a string belongs', file('config-number.json'), /"appKey" must be a string/),
  configCase('a boolean where a string belongs', file('config-bool.json'), /"appCode" must be a string/),
  configCase('null where a string belongs', file('config-null-value.json'), /"fcDatabaseUrl" must be a string/),
  configCase('an object where a string belongs', file('config-object.json'), /"amqpUrl" must be a string/),
  configCase('arrays nested 100,000 deep', file('config-deep.json'), /"appKey" must be a string/),
  configCase('bytes that are not UTF-8', file('config-latin1.json'), /not UTF-8/),
  {
    ...configCase('appSecretFile naming a missing file', file('config-secret-file.json'), /appSecretFile: cannot read/),
    env: { FCCTL_APP_SECRET: '' },
  },
  {
    name: '--config without its value',
    argv: ['config', 'show', '--config'],
    says: /option '--config <file>' argument missing/,
  },
  { name: 'an unknown global option', argv: ['--bogus', 'config', 'show'], says: /unknown option '--bogus'/ },
  { name: 'an unknown command', argv: ['bogus'], says: /unknown command 'bogus'/ },
  { name: 'an unknown subcommand', argv: ['deliveries', 'bogus'], says: /unknown command 'bogus'/ },
  { name: 'a command name with SQL', argv: [DROP], says: /unknown command/ },
  // Issue 17: commander's suggestion stays, on the same line; the top level looks one level deeper.
  {
    name: 'a mistyped command (fcctl sned)',
    argv: ['sned'],
    says: /^fcctl: unknown command 'sned' \(did you mean deliveries send\?\)\n$/,
  },
  {
    name: 'a mistyped subcommand (fcctl deliveries sned)',
    argv: ['deliveries', 'sned'],
    says: /^fcctl: unknown command 'sned' \(did you mean send\?\)\n$/,
  },
  {
    name: 'a mistyped option (--batch-siz)',
    argv: ['deliveries', 'send', '--batch-siz', '5'],
    says: /^fcctl: unknown option '--batch-siz' \(did you mean --batch-size\?\)\n$/,
  },
  // Issue 16: the default-vhost switch is a flag, not a setting; the vhost must be a URL path.
  {
    name: 'deliveries send --allow-default-vhost=yes (a flag takes no value)',
    argv: ['deliveries', 'send', '--allow-default-vhost=yes'],
    says: /^fcctl: unknown option '--allow-default-vhost=yes'/,
  },
  {
    name: 'an amqpUrl whose vhost is not URL-encoded (%ZZ)',
    argv: ['--amqp-url', 'amqp://u:pw@127.0.0.1:1/%ZZ', 'deliveries', 'send'],
    env: { FCCTL_APP_KEY: 'k', FCCTL_APP_CODE: 'c' },
    says: /^fcctl: amqpUrl is not a URL with a valid vhost: amqp:\/\/u:\*\*\*@127\.0\.0\.1:1\/%ZZ\n$/,
  },
  {
    name: 'several required options missing: all named in one line',
    argv: ['deliveries', 'failed'],
    says: /^fcctl: required options '--consumer <key>' and '--school <id>' not specified\n$/,
  },
  {
    name: 'FCCTL_APP_SECRET_FILE naming a missing file',
    argv: ['config', 'show'],
    env: { FCCTL_APP_SECRET: '', FCCTL_APP_SECRET_FILE: file('absent-secret') },
    says: /FCCTL_APP_SECRET_FILE: cannot read/,
  },
  ...(
    [
      '--fc-database-url',
      '--sh-database-url',
      '--amqp-url',
      '--amqp-management-url',
      '--flow-url',
      '--app-key',
      '--app-code',
    ] as const
  ).map(
    (flag): RefusalCase => ({
      name: `${flag} ""`,
      argv: [flag, '', 'config', 'show'],
      says: new RegExp(`${escapeRegex(flag)} is empty`),
    }),
  ),
  ...[DROP, '%', '*', 'a.b', NON_UTF8, 'http://127.0.0.1/x', 'mysql//no-colon'].map(
    (url): RefusalCase => ({
      name: `--fc-database-url ${show(url)} (db check)`,
      argv: ['--fc-database-url', url, 'db', 'check', '--side', 'fc'],
      says: /FC database URL/,
    }),
  ),
  ...[DROP, '*', 'http://127.0.0.1:1/'].map(
    (url): RefusalCase => ({
      name: `--amqp-url ${show(url)} (deliveries send)`,
      argv: ['--amqp-url', url, 'deliveries', 'send'],
      says: /amqpUrl must start with amqp/,
    }),
  ),
  ...[DROP, '*', 'ftp://127.0.0.1/'].map(
    (url): RefusalCase => ({
      name: `--flow-url ${show(url)} (resolve-unknown)`,
      argv: ['--flow-url', url, 'apply-command', 'resolve-unknown', '--dry-run'],
      says: /flowUrl/,
    }),
  ),
  {
    name: 'FCCTL_FC_DATABASE_URL that is no URL (db check)',
    argv: ['db', 'check', '--side', 'fc'],
    env: { FCCTL_FC_DATABASE_URL: DROP },
    says: /FC database URL is not a valid URL/,
  },
  // commands that name their database in checkpoints and proofs read the URL first
  ...[
    ['reconcile', 'run', '--school', '5', '--form', 'f0000000-0000-4000-8000-000000000001', '--out-dir', 'never-made'],
    [
      'retire-absent',
      'prove',
      '--candidates',
      'never-made.jsonl',
      '--fc-manifest',
      'never-made-fc.jsonl',
      '--proof-id',
      'P-1',
      '--out',
      'never-made.json',
    ],
    [
      'manifest',
      'scan',
      '--side',
      'fc',
      '--school',
      '5',
      '--form',
      'f0000000-0000-4000-8000-000000000001',
      '--out',
      'never-made.jsonl',
    ],
  ].map(
    (argv): RefusalCase => ({
      name: `a malformed FC database URL with a password (${argv.slice(0, 2).join(' ')})`,
      argv,
      env: { FCCTL_FC_DATABASE_URL: 'mysql://u:s3cret@db:port/fc' },
      says: /database URL is not a valid URL: \*\*\*/,
    }),
  ),
  {
    name: 'no FC database configured (deliveries scan)',
    argv: ['deliveries', 'scan'],
    env: { FCCTL_FC_DATABASE_URL: '' },
    says: /fcDatabaseUrl is not configured/,
  },
  {
    name: 'no SH database configured (apply-command scan)',
    argv: ['apply-command', 'scan'],
    env: { FCCTL_SH_DATABASE_URL: '' },
    says: /shDatabaseUrl is not configured/,
  },
  {
    name: 'no app key configured (deliveries send)',
    argv: ['deliveries', 'send'],
    env: { FCCTL_APP_KEY: '' },
    says: /appKey is not configured/,
  },
  {
    name: 'no app secret configured (resolve-unknown)',
    argv: ['apply-command', 'resolve-unknown'],
    env: { FCCTL_APP_SECRET: '' },
    says: /appSecret is not configured/,
  },
];

const DB_CASES: RefusalCase[] = [
  // the shared databases hold rows and are not marked: `--dev` would let `dev seed --replace` delete them
  ...(['fc', 'sh', 'all'] as const).map(
    (side): RefusalCase => ({
      name: `db init --side ${side} --dev on databases holding data`,
      argv: ['db', 'init', '--side', side, '--dev'],
      code: 4,
      says: /refusing to mark a development database: the (FC|SH) database holds rows/,
    }),
  ),
  {
    name: 'dev seed on a database not marked for development',
    argv: ['dev', 'seed', '--answers', '5'],
    code: 4,
    says: /not marked as a development database/,
  },
  {
    name: 'dev seed --replace on a database not marked for development (deletes nothing)',
    argv: ['dev', 'seed', '--replace', '--answers', '5'],
    code: 4,
    says: /not marked as a development database/,
  },
  ...[DROP, 'a\u0000b', 'a\tb', ...WILDCARDS, '', 'k'.repeat(65)].map(
    (key): RefusalCase => ({
      name: `dev seed --consumer-keys ${show(`k1,${key}`)}`,
      argv: ['dev', 'seed', '--consumer-keys', `k1,${key}`],
      says: /--consumer-keys: .* is not a valid app key/,
    }),
  ),
  // LIKE wildcards and a backslash make routing keys (they are parameters, not patterns): the refusal is the database's
  ...['%', '_', '\\', NON_UTF8].map(
    (key): RefusalCase => ({
      name: `dev seed --consumer-keys ${show(`k1,${key}`)} on an unmarked database`,
      argv: ['dev', 'seed', '--consumer-keys', `k1,${key}`],
      code: 4,
      says: /not marked as a development database/,
    }),
  ),
  ...['k1,k1', 'k1, k1'].map(
    (keys): RefusalCase => ({
      name: `dev seed --consumer-keys ${show(keys)}: a key twice`,
      argv: ['dev', 'seed', '--consumer-keys', keys],
      says: /a key is given twice/,
    }),
  ),
  {
    name: 'dev seed --consumer-keys holding the publisher key',
    argv: ['dev', 'seed', '--consumer-keys', `k1,${PUBLISHER.appKey}`],
    says: /is the publisher's app key/,
  },
  {
    name: 'dev seed --consumers not matching --consumer-keys',
    argv: ['dev', 'seed', '--consumers', '3', '--consumer-keys', 'k1,k2'],
    says: /does not match the 2 keys/,
  },
];

/** `doctor --isolation` needs the management API (http or https) and the publisher's AMQP URL; refused before anything connects. */
const MANAGEMENT_SECRET = 'mgmt-SECRET-pw';
const DOCTOR_CASES: RefusalCase[] = [
  {
    name: 'doctor --isolation without a management URL',
    argv: ['doctor', '--isolation'],
    says: /^fcctl: --isolation reads the RabbitMQ management API: set FCCTL_AMQP_MANAGEMENT_URL/,
  },
  {
    name: 'doctor --isolation without an AMQP URL',
    argv: ['--amqp-management-url', 'http://u:p@127.0.0.1:1/', 'doctor', '--isolation'],
    env: { FCCTL_AMQP_URL: '' },
    says: /--isolation checks the publisher of FCCTL_AMQP_URL: set FCCTL_AMQP_URL/,
  },
  ...[
    `amqp://fcctl:${MANAGEMENT_SECRET}@127.0.0.1:35672/fcctl`,
    'ftp://127.0.0.1/',
    'file:///etc/passwd',
    `mysql://u:${MANAGEMENT_SECRET}@h/db`,
    DROP,
    '*',
    'mysql//no-colon',
    NON_UTF8,
  ].map(
    (url): RefusalCase => ({
      name: `doctor --isolation --amqp-management-url ${show(url)}`,
      argv: ['--amqp-management-url', url, 'doctor', '--isolation'],
      // the password of a URL that is refused is masked too
      says: new RegExp(
        `^(?![\\s\\S]*${MANAGEMENT_SECRET})fcctl: amqpManagementUrl (must start with http:\\/\\/ or https:\\/\\/|is not a valid URL)`,
      ),
    }),
  ),
  {
    name: 'doctor --isolation with FCCTL_AMQP_MANAGEMENT_URL of another scheme',
    argv: ['doctor', '--isolation'],
    env: { FCCTL_AMQP_MANAGEMENT_URL: 'amqps://127.0.0.1:5671/' },
    says: /amqpManagementUrl must start with http:\/\/ or https:\/\//,
  },
  {
    name: 'doctor --consumer-queue without --isolation',
    argv: ['doctor', '--consumer-queue', 'svc-hall.q'],
    says: /--consumer-queue applies only with --isolation/,
  },
  {
    name: 'doctor --consumer-user without --isolation',
    argv: ['doctor', '--consumer-user', 'svc-hall'],
    says: /^fcctl: --consumer-user applies only with --isolation\n$/,
  },
  ...['', 'a\u0000b', 'a\nb', 'svc\u007f'].map(
    (name): RefusalCase => ({
      name: `doctor --consumer-user ${show(name)}`,
      argv: ['doctor', '--isolation', '--consumer-user', 'svc-hall', '--consumer-user', name],
      says: /option '--consumer-user <name>' argument .* is invalid\. expected a user name/,
    }),
  ),
  {
    name: 'doctor --isolation --consumer-user naming the publisher of FCCTL_AMQP_URL',
    argv: [
      '--amqp-management-url',
      'http://u:p@127.0.0.1:1/',
      'doctor',
      '--isolation',
      '--consumer-user',
      'svc-hall',
      '--consumer-user',
      'fc-pub',
    ],
    env: { FCCTL_AMQP_URL: `amqp://fc-pub:${MANAGEMENT_SECRET}@127.0.0.1:1/fcctl` },
    says: new RegExp(
      `^(?![\\s\\S]*${MANAGEMENT_SECRET})fcctl: --consumer-user "fc-pub" is the publisher of FCCTL_AMQP_URL: the publisher must read nothing`,
    ),
  },
  ...['', 'a\u0000b', 'a\nb', 'q'.repeat(256), 'é'.repeat(128)].map(
    (name): RefusalCase => ({
      name: `doctor --consumer-queue ${show(name.length > 20 ? `${name.slice(0, 8)}… (${Buffer.byteLength(name)} bytes)` : name)}`,
      argv: ['doctor', '--isolation', '--consumer-queue', name],
      says: /option '--consumer-queue <name>' argument .* is invalid/,
    }),
  ),
];

/** `canon` inputs refused with the one line fcctl's own errors have (the file, not its JSON). */
const CANON_FCCTL_CASES: RefusalCase[] = [
  ...(['hash', 'check-envelope'] as const).flatMap((sub): RefusalCase[] => [
    {
      name: `canon ${sub}: a file that does not exist`,
      argv: ['canon', sub, file('absent.json')],
      says: /cannot read .*absent\.json: no such file/,
    },
    { name: `canon ${sub}: a directory`, argv: ['canon', sub, dir], says: /is a directory/ },
    { name: `canon ${sub}: two files`, argv: ['canon', sub, GOOD_JSON, GOOD_JSON], says: /too many arguments/ },
    { name: `canon ${sub}: a file name with a NUL byte`, argv: ['canon', sub, 'a\u0000b'], says: /cannot read/ },
  ]),
  {
    name: 'canon hash --lines: a file that does not exist',
    argv: ['canon', 'hash', '--lines', file('absent.json')],
    says: /no such file/,
  },
  { name: 'canon verify: no file', argv: ['canon', 'verify'], says: /missing required argument 'files'/ },
  {
    name: 'canon verify: a file that does not exist',
    argv: ['canon', 'verify', file('absent.json')],
    says: /no such file/,
  },
  {
    name: 'canon verify: one good file and one missing',
    argv: ['canon', 'verify', GOOD_VECTORS, file('absent.json')],
    says: /no such file/,
  },
  ...(
    [
      ['malformed JSON', 'config-malformed.json', /not JSON/],
      ['an empty file', 'empty', /not JSON/],
      ['a 50 MB unterminated line', 'huge.json', /not JSON/],
      ['arrays nested 100,000 deep', 'deep.json', /not a JSON object/],
      ['an array', 'vectors-array.json', /not a JSON object/],
      ['another spec', 'vectors-spec.json', /spec is "fc\.canon\.v2"/],
      ['no vectors', 'vectors-empty.json', /"vectors" is empty/],
      ['a vector without a name', 'vectors-no-name.json', /"name" must be a non-empty string/],
      ['a hash that is not 64 hex digits', 'vectors-bad-hash.json', /"hash" must be 64 lowercase hex digits/],
      ['an error code holding SQL', 'vectors-sql-code.json', /"errorCode" .* is not one of/],
      ['vectors nested 100,000 deep', 'vectors-deep.json', /not an object/],
      ['bytes that are not UTF-8', 'latin1.json', /not UTF-8/],
    ] as const
  ).map(
    ([what, name, says]): RefusalCase => ({
      name: `canon verify: ${what}`,
      argv: ['canon', 'verify', file(name)],
      says: new RegExp(`not a vector file: .*${says.source}`),
    }),
  ),
  ...(
    [
      ['malformed JSON', 'config-malformed.json', 'UNTERMINATED'],
      ['an empty file', 'empty', 'EMPTY_INPUT'],
      ['a 50 MB unterminated line', 'huge.json', 'UNTERMINATED'],
      ['bytes that are not UTF-8', 'latin1.json', 'INVALID_UTF8'],
    ] as const
  ).map(
    ([what, name, code]): RefusalCase => ({
      name: `canon check-envelope: ${what}`,
      argv: ['canon', 'check-envelope', file(name)],
      says: new RegExp(`is not JSON: ${code}: `),
    }),
  ),
  {
    name: 'canon check-envelope: malformed JSON on standard input',
    argv: ['canon', 'check-envelope', '-'],
    stdin: '{"eventId":',
    says: /standard input is not JSON/,
  },
];

/** `canon hash` refusals of a document: exit 2, one line `error: CODE: message (line L, column C)` as the README documents. */
const CANON_DOCUMENT_CASES: ReadonlyArray<{ name: string; argv: string[]; stdin?: string; code: string }> = [
  ...(
    [
      ['malformed JSON', 'config-malformed.json', 'UNTERMINATED'],
      ['an empty file', 'empty', 'EMPTY_INPUT'],
      ['a trailing comma', 'canon-trailing-comma.json', 'TRAILING_COMMA'],
      ['a duplicate member', 'canon-duplicate.json', 'DUPLICATE_KEY'],
      ['NaN', 'canon-nan.json', 'NOT_A_NUMBER'],
      ['a comment', 'canon-comment.json', 'COMMENT'],
      ['trailing data', 'canon-trailing-data.json', 'TRAILING_DATA'],
      ['a number literal of 1001 digits', 'canon-long-number.json', 'NUMBER_LITERAL_TOO_LONG'],
      ['nesting 1001 deep', 'canon-deep-1001.json', 'TOO_DEEP'],
      ['arrays nested 100,000 deep', 'deep.json', 'TOO_DEEP'],
      ['a 50 MB unterminated line', 'huge.json', 'UNTERMINATED'],
      ['bytes that are not UTF-8', 'latin1.json', 'INVALID_UTF8'],
    ] as const
  ).flatMap(([what, name, code]) => [
    { name: `canon hash: ${what}`, argv: ['canon', 'hash', file(name)], code },
    {
      name: `canon hash --canonical --number-mode double: ${what}`,
      argv: ['canon', 'hash', '--canonical', '--number-mode', 'double', file(name)],
      code,
    },
  ]),
  {
    name: 'canon hash: malformed JSON on standard input',
    argv: ['canon', 'hash', '-'],
    stdin: '{"a":[1,2',
    code: 'UNTERMINATED',
  },
  { name: 'canon hash: SQL on standard input', argv: ['canon', 'hash'], stdin: DROP, code: 'SYNTAX' },
];

/**
 * Commands that report what is wrong with their input as their result, as documented: exit 1
 * (canon: the bad line or envelope problem), or 3 (doctor: a failed check — a checker names every
 * broken setting instead of stopping at the first); the problem named on stdout, nothing on stderr.
 */
const FINDING_CASES: ReadonlyArray<{ name: string; argv: string[]; finds: RegExp; code?: 3; hides?: string }> = [
  {
    name: 'canon hash --lines: one bad line of three',
    argv: ['canon', 'hash', '--lines', file('lines-one-bad.jsonl')],
    finds: /^[0-9a-f]{64}\nerror\tTRAILING_COMMA\t.*\n[0-9a-f]{64}\n$/,
  },
  {
    name: 'canon hash --lines: a 50 MB line',
    argv: ['canon', 'hash', '--lines', file('huge.json')],
    finds: /^error\tUNTERMINATED\t/,
  },
  {
    name: 'canon hash --lines --max-line-bytes 1 MiB: a 50 MB line',
    argv: ['canon', 'hash', '--lines', '--max-line-bytes', '1048576', file('huge.json')],
    finds: /^error\tLINE_TOO_LONG\ta line of 52428806 bytes/,
  },
  {
    name: 'canon hash --lines: arrays nested 100,000 deep',
    argv: ['canon', 'hash', '--lines', file('deep.json')],
    finds: /^error\tTOO_DEEP\t/,
  },
  {
    name: 'canon hash --lines: bytes that are not UTF-8',
    argv: ['canon', 'hash', '--lines', file('latin1.json')],
    finds: /^error\tINVALID_UTF8\t/,
  },
  ...(
    [
      ['a missing member', 'envelope-missing.json', 'MISSING_MEMBER'],
      ['an extra member holding SQL', 'envelope-extra.json', 'EXTRA_MEMBER'],
      ['a member of the wrong type', 'envelope-type.json', 'INVALID_MEMBER'],
      ['a content hash that does not match', 'envelope-hash.json', 'SNAPSHOT_HASH_MISMATCH'],
      ['a dotted consumer key', 'envelope-dotted-key.json', 'INVALID_ROUTING_KEY'],
      ['a wildcard consumer key', 'envelope-wild-key.json', 'INVALID_ROUTING_KEY'],
      ['school 0', 'envelope-school-0.json', 'INVALID_'],
      ['an array', 'envelope-array.json', 'NOT_AN_OBJECT'],
      ['arrays nested 100,000 deep', 'deep.json', 'NOT_AN_OBJECT'],
      ['a snapshot of arrays nested 100,000 deep', 'envelope-deep-member.json', 'SNAPSHOT_INVALID'],
      ['a duplicate member', 'envelope-duplicate.json', 'DUPLICATE_MEMBER'],
    ] as const
  ).map(([what, name, code]) => ({
    name: `canon check-envelope: ${what}`,
    argv: ['canon', 'check-envelope', file(name)],
    finds: new RegExp(`"type":"problem","code":"${code}`),
  })),
  ...(
    [
      ['--fc-database-url', DROP, /"check":"FC database","status":"fail","detail":"FC database URL is not a valid URL/],
      [
        '--sh-database-url',
        'http://127.0.0.1/x',
        /"check":"SH database","status":"fail","detail":"SH database URL must start with mysql:\/\//,
      ],
      ['--amqp-url', '*', /"check":"broker","status":"fail","detail":"amqpUrl must start with amqp/],
      ['--flow-url', DROP, /"check":"flow center","status":"fail"/],
      [
        '--service-time-zone',
        'Mars/Olympus',
        /"check":"service time zone","status":"fail","detail":"serviceTimeZone from --service-time-zone: \\"Mars\/Olympus\\" is not an IANA time zone name/,
      ],
    ] as const
  ).map(([flag, value, finds]) => ({
    name: `doctor ${flag} ${show(value)}`,
    argv: [flag, value, 'doctor'],
    finds,
    code: 3 as const,
  })),
  // the management API of the test broker with a wrong password: a failed check naming the refusal, the password never printed
  {
    name: 'doctor --isolation with a wrong management password',
    argv: ['--amqp-management-url', managementUrlAs(undefined, MANAGEMENT_SECRET), 'doctor', '--isolation'],
    finds:
      /"check":"isolation: management API","status":"fail","detail":"RabbitMQ management API at http:\/\/[^:]+:\*\*\*@127\.0\.0\.1:\d+\/?: the management API refused the credentials of user \\"[^"\\]+\\" \(HTTP 401\)"/,
    code: 3,
    hides: MANAGEMENT_SECRET,
  },
];

const REPLAY_FILE_CASES: RefusalCase[] = [
  ...(
    [
      ['a file that does not exist', 'absent.csv', /cannot read: ENOENT/],
      ['an empty file', 'empty', /no header line/],
      ['a header and no items', 'replay-header-only.csv', /holds no replay items/],
      ['a missing column', 'replay-no-column.csv', /line 1: the header lacks expectedRevision/],
      ['a quote inside an unquoted field', 'replay-quote.csv', /line 2: malformed CSV/],
      ['a quoted field not closed', 'replay-open-quote.csv', /line 2: malformed CSV: a quoted field is not closed/],
      ['a row with too few fields', 'replay-fields.csv', /line 2: malformed CSV: 2 fields/],
      ['an answer that is not a UUID', 'replay-uuid.csv', /line 2: answerUuid .* is not a UUID/],
      ['a negative revision', 'replay-revision.csv', /line 2: expectedRevision "-1" is not a whole number/],
      ['a revision beyond BIGINT', 'replay-revision-big.csv', /line 2: expectedRevision .* is not a whole number/],
      ['an empty operation id', 'replay-op-empty.csv', /line 2: operationId is empty/],
      ['an operation id of 129 characters', 'replay-op-long.csv', /line 2: operationId is longer than 128/],
      ['an operation id with a NUL byte', 'replay-op-nul.csv', /line 2: operationId holds control characters/],
      ['one operation id for two answers', 'replay-op-twice.csv', /line 3: operation id "op-1" is used on line 2/],
      ['bytes that are not UTF-8', 'replay-latin1.csv', /not UTF-8 text/],
      ['JSON lines with one bad line', 'replay-bad-line.jsonl', /line 2: malformed JSON/],
      ['a JSON line that is not an object', 'replay-not-object.jsonl', /line 2: not a JSON object/],
      ['a fractional revision', 'replay-fraction.jsonl', /line 1: expectedRevision 1\.5 is not a whole number/],
      ['a 50 MB unterminated line', 'huge.json', /line 1: malformed JSON/],
      ['arrays nested 100,000 deep', 'deep.json', /line 1: the header lacks/],
      ['100,001 items', 'replay-too-many.csv', /line 100002: more than 100000 items/],
    ] as const
  ).map(
    ([what, name, says]): RefusalCase => ({
      name: `deliveries replay --from: ${what}`,
      argv: ['deliveries', 'replay', '--consumer', KEY, '--school', '5', '--from', file(name), '--execute'],
      says,
    }),
  ),
  {
    name: 'deliveries replay --from a directory',
    argv: ['deliveries', 'replay', '--consumer', KEY, '--school', '5', '--from', dir],
    says: /cannot read: EISDIR/,
  },
  {
    name: 'deliveries replay --from - : malformed JSON on standard input',
    argv: ['deliveries', 'replay', '--consumer', KEY, '--school', '5', '--from', '-', '--execute'],
    stdin: '{"answerUuid":',
    says: /--from -: line 1: malformed JSON/,
  },
  {
    name: 'deliveries replay --from with --answer',
    argv: [
      'deliveries',
      'replay',
      '--consumer',
      KEY,
      '--school',
      '5',
      '--from',
      file('replay-fields.csv'),
      '--answer',
      ANSWER,
    ],
    says: /--from cannot be combined/,
  },
  {
    name: 'deliveries replay: neither --from nor a single request',
    argv: ['deliveries', 'replay', '--consumer', KEY, '--school', '5'],
    says: /give --answer, --expected-revision and --operation-id/,
  },
  ...(['--answer', '--expected-revision', '--operation-id'] as const).map(
    (flag): RefusalCase => ({
      name: `deliveries replay: ${flag} left out of a single request`,
      argv: ['deliveries', 'replay', ...without(SINGLE_REPLAY, flag), '--execute'],
      says: /give --answer, --expected-revision and --operation-id/,
    }),
  ),
];

/** `--consumer` and `--school`, shared by replay and failed; each value given to both commands. */
function targetCases(): RefusalCase[] {
  const commands = [
    ['deliveries', 'replay', ...SINGLE_REPLAY.slice(4), '--execute'],
    ['deliveries', 'failed'],
  ];
  const consumers = ['', ' ', DROP, 'a\u0000b', 'a\tb', 'k'.repeat(65)];
  const schools = [
    '0',
    '-1',
    'abc',
    '',
    '05',
    '1e3',
    '5.0',
    ' 5',
    '5 ',
    '99999999999999999999',
    '9223372036854775808',
    `5${DROP}`,
    '5%',
    '*',
    '#',
    '5.6',
    NON_UTF8,
    '٥',
  ];
  return commands.flatMap(([, sub, ...rest]) => [
    ...consumers.map(
      (c): RefusalCase => ({
        name: `deliveries ${sub} --consumer ${show(c)}`,
        argv: ['deliveries', sub!, '--consumer', c, '--school', '5', ...rest],
        says: /option '--consumer <key>' argument .* is invalid/,
      }),
    ),
    ...schools.map(
      (s): RefusalCase => ({
        name: `deliveries ${sub} --school ${show(s)}`,
        argv: ['deliveries', sub!, '--consumer', KEY, '--school', s, ...rest],
        says: /option '--school <id>' argument .* is invalid/,
      }),
    ),
  ]);
}

/** Single-request replay flags: every string kind in --answer, --expected-revision and --operation-id (executed: a write would show). */
function replayFlagCases(): RefusalCase[] {
  const single = (flag: string, value: string) => [
    ...SINGLE_REPLAY.slice(0, SINGLE_REPLAY.indexOf(flag) + 1),
    value,
    ...SINGLE_REPLAY.slice(SINGLE_REPLAY.indexOf(flag) + 2),
    '--execute',
  ];
  const answers = [...STRINGS, ANSWER.slice(0, -1), `${ANSWER}0`, ` ${ANSWER}`, ANSWER.replaceAll('-', '')];
  const revisions = [...STRINGS, '-1', '1.5', '1e3', '0x10', '99999999999999999999', '9223372036854775808', ' 1'];
  const operations = ['', ' op', 'op ', 'op\u0000x', 'op\nx', 'o'.repeat(129)];
  return [
    ...answers.map(
      (v): RefusalCase => ({
        name: `deliveries replay --answer ${show(v)}`,
        argv: ['deliveries', 'replay', ...single('--answer', v)],
        says: /--answer .* is not a UUID/,
      }),
    ),
    ...revisions.map(
      (v): RefusalCase => ({
        name: `deliveries replay --expected-revision ${show(v)}`,
        argv: ['deliveries', 'replay', ...single('--expected-revision', v)],
        says: /--expected-revision .* is not a whole number/,
      }),
    ),
    ...operations.map(
      (v): RefusalCase => ({
        name: `deliveries replay --operation-id ${show(v)}`,
        argv: ['deliveries', 'replay', ...single('--operation-id', v)],
        says: /--operation-id (is empty|is longer|holds control characters or surrounding spaces)/,
      }),
    ),
    // SPEC §4: a key with . * # can never be routed; replaying it would only requeue a row send must fail again
    ...WILDCARDS.map(
      (v): RefusalCase => ({
        name: `deliveries replay --consumer ${show(v)} (no routing key)`,
        argv: ['deliveries', 'replay', ...single('--consumer', v)],
        says: /option '--consumer <key>' argument .* is invalid.*\. \* #/,
      }),
    ),
  ];
}

/**
 * `apply-command requeue` (issue 17): one selection of three, `--reason` a code fcctl writes and
 * only with `--dead`, a well-formed operation id and business key, a readable `--from` file, an
 * evidence file that opens — all with `--execute`, so a write anywhere would show.
 */
function requeueCases(): RefusalCase[] {
  const requeue = (...args: string[]): string[] => [
    'apply-command',
    'requeue',
    ...args,
    '--execute',
    '--evidence',
    file('requeue-evidence.jsonl'),
  ];
  const op = ['--operation-id', 'op-requeue-bad'];
  const one = ['--biz-type', 'honor_apply', '--biz-id', 'A-1'];
  const reasons = [
    ...STRINGS,
    'lookup_timeout',
    'LOOKUP_HTTP_',
    'APPLY_HTTP_5000',
    'LOOKUP_TIMEOUT ',
    'ROUND_BEHIND',
    'MIRROR_CHANGED',
    'DEAD',
  ];
  const operations = ['', ' op', 'op ', 'op\u0000x', 'op\nx', 'o'.repeat(129), HUGE];
  const fromFile = (what: string, name: string, says: RegExp): RefusalCase => ({
    name: `apply-command requeue --from: ${what}`,
    argv: requeue('--from', file(name), ...op),
    says,
  });
  return [
    {
      name: 'apply-command requeue: no selection',
      argv: requeue(...op),
      says: /give --biz-type and --biz-id for one command, --from FILE for a list, or --dead/,
    },
    {
      name: 'apply-command requeue: --biz-type without --biz-id',
      argv: requeue('--biz-type', 'honor_apply', ...op),
      says: /--biz-type and --biz-id go together/,
    },
    {
      name: 'apply-command requeue: --biz-id without --biz-type',
      argv: requeue('--biz-id', 'A-1', ...op),
      says: /--biz-type and --biz-id go together/,
    },
    {
      name: 'apply-command requeue: a key and --dead',
      argv: requeue(...one, '--dead', ...op),
      says: /three ways to select: give one/,
    },
    {
      name: 'apply-command requeue: a key and --from',
      argv: requeue(...one, '--from', file('requeue-header-only.csv'), ...op),
      says: /three ways to select/,
    },
    {
      name: 'apply-command requeue: --from and --dead',
      argv: requeue('--from', file('requeue-header-only.csv'), '--dead', ...op),
      says: /three ways to select/,
    },
    {
      name: 'apply-command requeue: --reason without --dead',
      argv: requeue(...one, '--reason', 'UNEXPECTED_BRANCH', ...op),
      says: /--reason applies only with --dead/,
    },
    {
      name: 'apply-command requeue: --reason with --from',
      argv: requeue('--from', file('requeue-header-only.csv'), '--reason', 'LOOKUP_TIMEOUT', ...op),
      says: /--reason applies only with --dead/,
    },
    ...reasons.map(
      (v): RefusalCase => ({
        name: `apply-command requeue --dead --reason ${show(v)}`,
        argv: requeue('--dead', '--reason', v, ...op),
        says: /^fcctl: ".*" is not a reason code fcctl writes \(OWNERSHIP_MISMATCH, UNEXPECTED_BRANCH, INVALID_COMMAND/,
      }),
    ),
    ...operations.map(
      (v): RefusalCase => ({
        name: `apply-command requeue --operation-id ${show(v.length > 20 ? `${v.slice(0, 8)}… (${v.length} characters)` : v)}`,
        argv: requeue('--dead', '--operation-id', v),
        says: /^fcctl: --operation-id (is empty|is longer than 128 characters|holds control characters or surrounding spaces)\n$/,
      }),
    ),
    ...(
      [
        ['--biz-type', '', /--biz-type is missing or empty/],
        ['--biz-type', 't'.repeat(33), /--biz-type is longer than 32 characters/],
        ['--biz-id', 'i'.repeat(65), /--biz-id is longer than 64 characters/],
        ['--biz-id', HUGE, /--biz-id is longer than 64 characters/],
        ['--biz-id', ' A-1', /--biz-id .* holds control characters or surrounding spaces/],
        ['--biz-id', 'A\u00001', /--biz-id .* holds control characters/],
        ['--biz-type', 'honor\napply', /--biz-type .* holds control characters/],
      ] as const
    ).map(([flag, value, says]): RefusalCase => {
      const args =
        flag === '--biz-type'
          ? ['--biz-type', value, '--biz-id', 'A-1']
          : ['--biz-type', 'honor_apply', '--biz-id', value];
      return {
        name: `apply-command requeue ${flag} ${show(value.length > 20 ? `${value.slice(0, 8)}… (${value.length} characters)` : value)}`,
        argv: requeue(...args, ...op),
        says,
      };
    }),
    fromFile('a file that does not exist', 'absent.csv', /--from .*absent\.csv: cannot read: ENOENT/),
    {
      name: 'apply-command requeue --from a directory',
      argv: requeue('--from', dir, ...op),
      says: /cannot read: EISDIR/,
    },
    fromFile('an empty file', 'empty', /no header line \(columns: biz_type, biz_id\)/),
    fromFile('a header and no keys', 'requeue-header-only.csv', /names no command/),
    fromFile(
      'a header without biz_id',
      'requeue-no-column.csv',
      /line 1: the header lacks biz_id \(columns: biz_type, biz_id\)/,
    ),
    fromFile(
      'biz_id twice in the header',
      'requeue-header-twice.csv',
      /line 1: column biz_id appears twice in the header/,
    ),
    fromFile(
      'a quote inside an unquoted field',
      'requeue-quote.csv',
      /line 2: malformed CSV: a quote inside an unquoted field/,
    ),
    fromFile(
      'a quoted field not closed',
      'requeue-open-quote.csv',
      /line 2: malformed CSV: a quoted field is not closed/,
    ),
    fromFile('a row with too few fields', 'requeue-fields.csv', /line 2: malformed CSV: 1 fields, the header has 2/),
    fromFile('an empty biz_id', 'requeue-empty-id.csv', /line 2: biz_id is missing or empty/),
    fromFile('a biz_id longer than its column', 'requeue-long-id.csv', /line 2: biz_id is longer than 64 characters/),
    fromFile(
      'a biz_type longer than its column',
      'requeue-long-type.csv',
      /line 2: biz_type is longer than 32 characters/,
    ),
    fromFile(
      'a biz_id with a trailing space',
      'requeue-space.csv',
      /line 2: biz_id "A-1 " holds control characters or surrounding spaces/,
    ),
    fromFile('a biz_id with a NUL byte', 'requeue-nul.csv', /line 2: biz_id .* holds control characters/),
    fromFile('one key twice', 'requeue-twice.csv', /line 4: "honor_apply" "A-1" is named on line 2 already/),
    fromFile('bytes that are not UTF-8', 'requeue-latin1.csv', /not UTF-8 text/),
    fromFile('JSON lines with one bad line', 'requeue-bad-line.jsonl', /line 2: malformed JSON/),
    fromFile('a JSON line that is not an object', 'requeue-not-object.jsonl', /line 2: not a JSON object/),
    fromFile('a numeric bizId', 'requeue-number.jsonl', /line 1: bizId is missing or empty/),
    fromFile('snake_case members in JSON lines', 'requeue-snake.jsonl', /line 1: bizType is missing or empty/),
    fromFile('a 50 MB unterminated line', 'huge.json', /line 1: malformed JSON/),
    fromFile(
      'arrays nested 100,000 deep',
      'deep.json',
      /line 1: the header lacks biz_type, biz_id \(columns: biz_type, biz_id\)/,
    ),
    fromFile('100,001 keys', 'requeue-too-many.csv', /line 100002: more than 100000 commands; split the file/),
    {
      name: 'apply-command requeue --from - : malformed JSON on standard input',
      argv: requeue('--from', '-', ...op),
      stdin: '{"bizType":',
      says: /--from -: line 1: malformed JSON/,
    },
    {
      name: 'apply-command requeue --evidence ""',
      argv: ['apply-command', 'requeue', '--dead', ...op, '--evidence', ''],
      says: /option '--evidence <file>' argument .* is invalid/,
    },
    {
      name: 'apply-command requeue --evidence naming a directory',
      argv: ['apply-command', 'requeue', '--dead', ...op, '--execute', '--evidence', dir],
      says: /--evidence .*: cannot open for appending: EISDIR/,
    },
    {
      name: 'apply-command requeue --evidence in a missing directory',
      argv: ['apply-command', 'requeue', '--dead', ...op, '--execute', '--evidence', file('absent-dir/e.jsonl')],
      says: /--evidence .*: cannot open for appending: ENOENT/,
    },
    {
      name: 'no SH database configured (apply-command requeue)',
      argv: requeue('--dead', ...op),
      env: { FCCTL_SH_DATABASE_URL: '' },
      says: /shDatabaseUrl is not configured/,
    },
  ];
}

/** Values the cron commands must refuse before claiming anything (combinations of valid numbers). */
const CRON_CASES: RefusalCase[] = [
  {
    name: 'deliveries send: a lease shorter than two confirm timeouts',
    argv: ['deliveries', 'send', '--lease-seconds', '10', '--confirm-timeout', '6'],
    says: /--lease-seconds must be at least twice --confirm-timeout/,
  },
  {
    name: 'apply-command resolve-unknown: a lease shorter than two requests',
    argv: ['apply-command', 'resolve-unknown', '--lease-seconds', '10', '--request-timeout', '5'],
    says: /--lease-seconds must cover a lookup and an apply/,
  },
  ...[
    ['deliveries', 'scan'],
    ['deliveries', 'send'],
    ['apply-command', 'scan'],
    ['apply-command', 'resolve-unknown', '--dry-run'],
  ].flatMap((cmd) =>
    ['', 'a\u0000b'].map(
      (path): RefusalCase => ({
        name: `${cmd.slice(0, 2).join(' ')} --metrics-file ${show(path)}`,
        argv: [...cmd, '--metrics-file', path],
        says: /--metrics-file/,
      }),
    ),
  ),
  // Issue 17: a metrics file that cannot be written is found before any work (exit 3, nothing claimed).
  ...[
    ['deliveries', 'scan'],
    ['deliveries', 'send'],
    ['deliveries', 'send', '--dry-run'],
    ['apply-command', 'scan'],
    ['apply-command', 'resolve-unknown'],
  ].flatMap((cmd) =>
    [
      [
        'in a directory that does not exist',
        file('no-such-dir/m.prom'),
        /directory .*no-such-dir does not exist; nothing was done/,
      ],
      [
        'under a file',
        `${file('envelope-missing.json')}/m.prom`,
        /envelope-missing\.json is not a directory; nothing was done/,
      ],
      ['that is a directory', dir, /: it is a directory; nothing was done/],
    ].map(
      ([what, path, says]): RefusalCase => ({
        name: `${cmd.join(' ')} --metrics-file ${what as string}`,
        argv: [...cmd, '--metrics-file', path as string],
        code: 3,
        says: says as RegExp,
      }),
    ),
  ),
];

/**
 * `serviceTimeZone` (SPEC §10) on `deliveries send`, with the real broker: a zone checked late
 * would claim and publish the due rows, and the tables' checksums would show it.
 */
const sendZone = (name: string, c: Omit<RefusalCase, 'name' | 'argv'> & { flags?: string[] }): RefusalCase => ({
  name: `deliveries send: ${name}`,
  argv: [...(c.flags ?? []), 'deliveries', 'send'],
  // read when the case runs: a module-level testAmqpUrl() would throw outside the test script
  env: { FCCTL_AMQP_URL: process.env['FCCTL_TEST_AMQP_URL'], ...c.env },
  says: c.says!,
});
const ZONE_CASES: RefusalCase[] = [
  sendZone('--service-time-zone Mars/Olympus', {
    flags: ['--service-time-zone', 'Mars/Olympus'],
    says: /^fcctl: serviceTimeZone from --service-time-zone: "Mars\/Olympus" is not an IANA time zone name/,
  }),
  sendZone('FCCTL_SERVICE_TIME_ZONE=+25:00', {
    env: { FCCTL_SERVICE_TIME_ZONE: '+25:00' },
    says: /^fcctl: serviceTimeZone from FCCTL_SERVICE_TIME_ZONE: "\+25:00" is not an offset ±HH:MM/,
  }),
  sendZone('--service-time-zone ""', {
    flags: ['--service-time-zone', ''],
    says: /^fcctl: --service-time-zone is empty/,
  }),
  sendZone('a config file whose serviceTimeZone is a number', {
    flags: ['--config', file('config-zone-number.json')],
    says: /"serviceTimeZone" must be a string/,
  }),
  sendZone('a config file whose serviceTimeZone is no zone', {
    flags: ['--config', file('config-zone-bad.json')],
    says: /serviceTimeZone from the config file: "Mars\/Olympus" is not/,
  }),
  sendZone('FCCTL_SERVICE_TIME_ZONE_FILE holding an abbreviation', {
    env: { FCCTL_SERVICE_TIME_ZONE_FILE: file('zone-bad') },
    says: /serviceTimeZone from FCCTL_SERVICE_TIME_ZONE_FILE: "CST" is an abbreviation/,
  }),
  ...[
    'CST',
    '+08',
    '+0800',
    '+8:00',
    '-18:01',
    ' Asia/Shanghai',
    'Asia/Shanghai\n',
    ...SQL_META,
    ...WILDCARDS,
    NON_UTF8,
    'x'.repeat(10 * 1024 * 1024),
  ].map((zone) =>
    sendZone(
      `--service-time-zone ${show(zone.length > 20 ? `${zone.slice(0, 8)}… (${zone.length} characters)` : zone)}`,
      {
        flags: ['--service-time-zone', zone],
        says: /^fcctl: serviceTimeZone from --service-time-zone: ".*" (is not|is an abbreviation)/,
      },
    ),
  ),
  {
    name: 'deliveries send: --service-time-zone without its value',
    argv: ['deliveries', 'send', '--service-time-zone'],
    says: /option '--service-time-zone <zone>' argument missing/,
  },
];

const HUGE = 'x'.repeat(10 * 1024 * 1024);
/** 10 MB arguments and arguments holding a line break: still one line, cut to a readable length. */
const LONG_ARGUMENT_CASES: RefusalCase[] = [
  {
    name: 'deliveries failed --consumer of 10 MB',
    argv: ['deliveries', 'failed', '--consumer', HUGE, '--school', '5'],
    says: /--consumer <key>' argument 'x+…/,
  },
  {
    name: 'deliveries failed --school of 10 MB digits',
    argv: ['deliveries', 'failed', '--consumer', KEY, '--school', '9'.repeat(HUGE.length)],
    says: /--school <id>' argument/,
  },
  {
    name: 'deliveries replay --answer of 10 MB',
    argv: [
      'deliveries',
      'replay',
      '--consumer',
      KEY,
      '--school',
      '5',
      '--answer',
      HUGE,
      '--expected-revision',
      '1',
      '--operation-id',
      'op-1',
    ],
    says: /--answer "x+…/,
  },
  {
    name: 'deliveries replay --operation-id of 10 MB',
    argv: ['deliveries', 'replay', ...SINGLE_REPLAY.slice(0, -1), HUGE, '--execute'],
    says: /--operation-id is longer than 128 characters/,
  },
  {
    name: 'dev seed --consumer-keys of 10 MB',
    argv: ['dev', 'seed', '--consumer-keys', HUGE],
    says: /--consumer-keys: "x+…/,
  },
  {
    name: 'deliveries scan --format of 10 MB',
    argv: ['deliveries', 'scan', '--format', HUGE],
    says: /--format <format>' argument 'x+…/,
  },
  {
    name: '--config naming a path of 10 MB',
    argv: ['--config', HUGE, 'config', 'show'],
    says: /--config: cannot read x+…/,
  },
  { name: 'canon hash of a path of 10 MB', argv: ['canon', 'hash', HUGE], says: /cannot read x+…/ },
  {
    name: '--fc-database-url of 10 MB',
    argv: ['--fc-database-url', HUGE, 'db', 'check', '--side', 'fc'],
    says: /FC database URL/,
  },
  {
    name: 'deliveries failed --consumer holding a line break',
    argv: ['deliveries', 'failed', '--consumer', 'a\nb', '--school', '5'],
    says: /argument 'a\\u000ab' is invalid/,
  },
  {
    name: 'deliveries replay --from a path holding a line break',
    argv: ['deliveries', 'replay', '--consumer', KEY, '--school', '5', '--from', 'a\nb'],
    says: /--from a\\u000ab: cannot read: ENOENT/,
  },
  {
    name: '--config naming a path holding a line break',
    argv: ['--config', 'a\r\nb', 'config', 'show'],
    says: /--config: cannot read a\\u000d\\u000ab: ENOENT/,
  },
  {
    name: 'canon check-envelope of a path holding a line break',
    argv: ['canon', 'check-envelope', 'a\nb'],
    says: /cannot read a\\u000ab: no such file/,
  },
];

/** Whole catalogue of refusals, by command family. */
const CATALOGUE: Record<string, RefusalCase[]> = {
  'generic options': COMMANDS.flatMap(genericCases),
  'global options and config': GLOBAL_CASES,
  'db init and dev seed': DB_CASES,
  'doctor --isolation': DOCTOR_CASES,
  canon: CANON_FCCTL_CASES,
  'deliveries replay --from': REPLAY_FILE_CASES,
  'deliveries --consumer and --school': targetCases(),
  'deliveries replay flags': replayFlagCases(),
  'apply-command requeue': requeueCases(),
  'cron commands': CRON_CASES,
  'deliveries send: serviceTimeZone': ZONE_CASES,
  'huge and multi-line arguments': LONG_ARGUMENT_CASES,
};

// --- what is accepted harmlessly -------------------------------------------------------------------

interface HarmlessCase {
  readonly name: string;
  readonly argv: readonly string[];
  readonly code: 0 | 1;
  /** the summary must hold these */
  readonly summary: Record<string, unknown>;
  /** runs against the test broker (the file's env points at a closed port) */
  readonly broker?: boolean;
}

/**
 * Values that are no bad input: fcctl passes them to the database as parameters, so they match
 * only themselves. A read-only listing of a consumer key holding SQL, LIKE wildcards or routing
 * wildcards lists nothing (rows of other keys exist: a wildcard match would list them); the keys
 * `--include-faults` seeds (`fault.dotted`, `fault*wild`) are listed exactly, as an operator
 * looking for them needs. A dry run with an operation id holding SQL answers normally and writes nothing.
 */
const HARMLESS_CASES: HarmlessCase[] = [
  ...[...SQL_META.filter((v) => !/[\s\u0000]/.test(v)), ...WILDCARDS, NON_UTF8, 'fault', 'fault_dotted', 'fault%'].map(
    (key): HarmlessCase => ({
      name: `deliveries failed --consumer ${show(key)} lists nothing`,
      argv: ['deliveries', 'failed', '--consumer', key, '--school', '5', '--format', 'json'],
      code: 0,
      summary: { listed: 0, total: 0 },
    }),
  ),
  ...['fault.dotted', 'fault*wild'].map(
    (key): HarmlessCase => ({
      name: `deliveries failed --consumer ${key} lists its own row only`,
      argv: ['deliveries', 'failed', '--consumer', key, '--school', '5', '--format', 'json'],
      code: 0,
      summary: { listed: 1, total: 1 },
    }),
  ),
  ...[DROP, '%', '_', '\\', '*', '#', 'a.b', NON_UTF8].map(
    (op): HarmlessCase => ({
      name: `deliveries replay --operation-id ${show(op)} (dry run) answers QUEUED, writes nothing`,
      argv: ['deliveries', 'replay', ...SINGLE_REPLAY.slice(0, -1), op],
      code: 0,
      summary: { dryRun: true, answered: 1, refused: 0 },
    }),
  ),
  ...['%', '_', '\\'].map(
    (key): HarmlessCase => ({
      name: `deliveries replay --consumer ${show(key)} (dry run) finds no row`,
      argv: ['deliveries', 'replay', '--consumer', key, ...SINGLE_REPLAY.slice(2)],
      code: 1,
      summary: { dryRun: true, refused: 1 },
    }),
  ),
  ...[DROP, '%', '*', NON_UTF8].map(
    (key): HarmlessCase => ({
      name: `resolve-unknown --dry-run with app key ${show(key)} takes no other app's rows`,
      argv: ['--app-key', key, 'apply-command', 'resolve-unknown', '--dry-run'],
      code: 0,
      summary: { claimed: 0, done: 0 },
    }),
  ),
  // requeue: a business key or operation id holding SQL or wildcards matches only itself (no command: refused, exit 1)
  ...[DROP, '%', '_', '\\', NON_UTF8].map(
    (v): HarmlessCase => ({
      name: `apply-command requeue --biz-id ${show(v)} (dry run) finds no command`,
      argv: [
        'apply-command',
        'requeue',
        '--biz-type',
        'honor_apply',
        '--biz-id',
        v,
        '--operation-id',
        `op-${v}`,
        '--evidence',
        file('requeue-harmless.jsonl'),
      ],
      code: 1,
      summary: { dryRun: true, answered: 1, refused: 1, byCode: expect.objectContaining({ NO_COMMAND: 1 }) },
    }),
  ),
  ...[DROP, '%', '*'].map(
    (v): HarmlessCase => ({
      name: `apply-command requeue --dead --reason APPLY_HTTP_599 --operation-id ${show(v)} (dry run) selects nothing`,
      argv: [
        'apply-command',
        'requeue',
        '--dead',
        '--reason',
        'APPLY_HTTP_599',
        '--operation-id',
        v,
        '--evidence',
        file('requeue-harmless.jsonl'),
      ],
      code: 0,
      summary: { dryRun: true, items: 0, refused: 0 },
    }),
  ),
  ...[DROP, '%', NON_UTF8].map(
    (code): HarmlessCase => ({
      name: `config show with --app-code ${show(code)} shows it as given`,
      argv: ['--app-code', code, 'config', 'show'],
      code: 0,
      summary: { command: 'config show' },
    }),
  ),
];

/**
 * A misconfigured publisher is the run's problem, never the rows': a key or code the registry does
 * not have stops `deliveries send` before any claim (exit 3, one line naming the setting), so one
 * wrong key cannot spend every row's retry budget (issue 16).
 */
const MISCONFIGURED_CASES: ReadonlyArray<{ name: string; argv: readonly string[]; says: RegExp }> = [
  ...[DROP, '*', 'a.b', NON_UTF8].flatMap((key) =>
    [[], ['--dry-run']].map((mode) => ({
      name: `deliveries send ${mode.join(' ')} with app key ${show(key)}: exit 3 before any claim`,
      argv: ['--app-key', key, 'deliveries', 'send', ...mode],
      says: /^fcctl: publisher identity: .*FCCTL_APP_KEY.*no row was claimed\n$/,
    })),
  ),
  ...[DROP, '%', 'nope'].map((code) => ({
    name: `deliveries send with app code ${show(code)}: exit 3 before any claim`,
    argv: ['--app-code', code, 'deliveries', 'send'],
    says: /^fcctl: publisher identity: no registry row for app code .*FCCTL_APP_CODE.*no row was claimed\n$/,
  })),
];

// --- the tests ----------------------------------------------------------------------------------

let dbs: TestDatabases;
let env: Record<string, string | undefined>;

async function checksums(): Promise<string[]> {
  return [
    await checksumTables(dbs.admin, dbs.fcName, FC_TABLES),
    await checksumTables(dbs.admin, dbs.shName, SH_TABLES_FOR_CHECKSUM),
  ];
}

/** Runs a case that is not an `fcctl:` refusal and returns what it printed, asserting the tables did not change. */
async function runUnchanged(argv: readonly string[], options: { env?: Record<string, string>; stdin?: string } = {}) {
  const before = await checksums();
  const r = await runCli(['--json', ...argv], { env: { ...env, ...options.env }, stdin: options.stdin });
  expect(await checksums()).toEqual(before);
  expect(r.stderr).not.toMatch(/\n\s+at /);
  return r;
}

describe('bad-input catalogue A: global options, config, db, doctor, dev seed, canon, deliveries, apply-command', () => {
  test.beforeAll(async ({ dbs: services }) => {
    for (const [name, content] of Object.entries(FILES)) writeFileSync(file(name), content);
    dbs = services;
    env = dbs.env({
      FCCTL_APP_KEY: PUBLISHER.appKey,
      FCCTL_APP_CODE: PUBLISHER.appCode,
      FCCTL_APP_SECRET: 'bad-input-secret',
      FCCTL_FLOW_URL: 'http://127.0.0.1:1/',
      FCCTL_AMQP_URL: 'amqp://127.0.0.1:1/',
    });
    // rows on both sides, so a write anywhere changes a checksum
    await insertRegistry(dbs.admin, dbs.fcName);
    await insertGrant(dbs.admin, dbs.fcName, { formUuid: FORM, schoolId: 5, consumerKey: KEY });
    const [pending] = await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: KEY }, 3);
    await dbs.admin.query(`UPDATE \`${dbs.fcName}\`.answer_delivery SET answer_uuid = ? WHERE event_id = ?`, [
      ANSWER,
      pending,
    ]);
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: KEY, state: 'FAILED', retryCount: 2 }, 2);
    await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: KEY, state: 'DEAD', retryCount: 8 });
    for (const key of ['fault.dotted', 'fault*wild'])
      await insertDeliveries(dbs.admin, dbs.fcName, { consumerKey: key, state: 'FAILED', retryCount: 1 });
    await ensureExchange();
    const prefix = uniquePrefix('bad');
    await insertCommands(dbs.admin, dbs.shName, [
      { bizId: `${prefix}-1` },
      { bizId: `${prefix}-2`, state: 'DEAD', retryCount: 6 },
      { bizId: `${prefix}-3`, state: 'PENDING', createTime: 'NOW() - INTERVAL 1 DAY' },
      { bizId: `${prefix}-4`, applyAppKey: 'other-app' },
    ]);
  }, 120_000);
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
  });

  for (const [family, cases] of Object.entries(CATALOGUE)) {
    describe(`refused: ${family}`, () => {
      test.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
        const r = await expectRefused(dbs, { ...c, env: { ...env, ...c.env } });
        // a refused 10 MB value is echoed cut, not whole
        expect(r.stderr.length).toBeLessThan(2100);
      });
    });
  }

  describe('refused: canon hash documents (exit 2, one line `error: CODE: …`, as documented)', () => {
    test.each(CANON_DOCUMENT_CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      const r = await runUnchanged(c.argv, { stdin: c.stdin });
      const ok =
        r.code === 2 &&
        r.stdout === '' &&
        new RegExp(`^error: ${c.code}: [^\\n]* \\(line \\d+, column \\d+\\)\\n$`).test(r.stderr);
      recordTotals(`bad-input: ${c.name}`, {
        badInputsTried: 1,
        badInputsRefused: ok ? 1 : 0,
        badInputsMishandled: ok ? 0 : 1,
      });
      expect({ code: r.code, stdout: r.stdout, stderr: r.stderr.slice(0, 300) }).toEqual({
        code: 2,
        stdout: '',
        stderr: expect.stringMatching(new RegExp(`^error: ${c.code}: [^\\n]* \\(line \\d+, column \\d+\\)\\n$`)),
      });
    });
  });

  describe("found: inputs whose problems are the command's result (exit 1 or 3, named on stdout)", () => {
    test.each(FINDING_CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      const r = await runUnchanged(c.argv);
      const ok =
        r.code === (c.code ?? 1) &&
        r.stderr === '' &&
        c.finds.test(r.stdout) &&
        !(c.hides && r.stdout.includes(c.hides));
      recordTotals(`bad-input: ${c.name}`, {
        badInputsTried: 1,
        badInputsRefused: ok ? 1 : 0,
        badInputsMishandled: ok ? 0 : 1,
      });
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: c.code ?? 1, stderr: '' });
      expect(r.stdout.slice(0, 2000)).toMatch(c.finds);
      if (c.hides) expect(r.stdout).not.toContain(c.hides);
    });
  });

  describe('a misconfigured publisher: exit 3 with one line, no row claimed, nothing changed', () => {
    test.each(MISCONFIGURED_CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      const r = await runUnchanged(c.argv, { env: { FCCTL_AMQP_URL: testAmqpUrl() } });
      const ok = r.code === 3 && c.says.test(r.stderr);
      recordTotals(`bad-input: ${c.name}`, {
        badInputsTried: 1,
        badInputsRefused: ok ? 1 : 0,
        badInputsMishandled: ok ? 0 : 1,
      });
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 3, stderr: expect.stringMatching(c.says) });
    });
  });

  describe('accepted harmlessly: values that are parameters, not bad input (exit as usual, nothing changed)', () => {
    test.each(HARMLESS_CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      const r = await runUnchanged(c.argv, { env: c.broker ? { FCCTL_AMQP_URL: testAmqpUrl() } : {} });
      const ok = r.code === c.code && r.stderr === '';
      recordTotals(`bad-input: ${c.name}`, {
        badInputsTried: 1,
        badInputsAcceptedHarmlessly: ok ? 1 : 0,
        badInputsMishandled: ok ? 0 : 1,
      });
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: c.code, stderr: '' });
      expect(jsonLines(r.stdout).at(-1)).toMatchObject({ type: 'summary', ...c.summary });
    });
  });

  test('a reader that goes away (`fcctl … | true`) costs no stack trace: the run keeps its exit code', async () => {
    const cases: Array<[string[], number]> = [
      [['--json', 'config', 'show'], 0],
      [['--json', 'canon', 'check-envelope', file('envelope-missing.json')], 1],
      [['config', 'show'], 0],
    ];
    for (const [argv, code] of cases) {
      const child = spawn(process.execPath, [FCCTL_BIN, ...argv], {
        env: env as NodeJS.ProcessEnv,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // closed before the child writes anything: its first write fails with EPIPE
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const exit = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect({ argv, exit, stderr }).toEqual({ argv, exit: code, stderr: '' });
    }
  });

  test('the catalogue is a few hundred cases', () => {
    const total =
      Object.values(CATALOGUE).reduce((n, cases) => n + cases.length, 0) +
      CANON_DOCUMENT_CASES.length +
      FINDING_CASES.length +
      HARMLESS_CASES.length +
      MISCONFIGURED_CASES.length;
    expect(total).toBeGreaterThan(300);
    expect(
      new Set(
        Object.values(CATALOGUE)
          .flat()
          .map((c) => c.name),
      ).size,
    ).toBe(Object.values(CATALOGUE).flat().length);
  });
});

/** `db init --dev` marks only a database that is safe to mark; `dev seed` fills only a marked one. */
describe('db init --dev refuses a database holding data', () => {
  let own: TestDatabases;
  const init = (args: string[]) => runCli(['--json', 'db', 'init', ...args], { env: own.env() });
  const marks = async () => {
    const rows: Array<number | null> = [];
    for (const name of [own.fcName, own.shName]) {
      const [r] = await own.admin.query(`SELECT is_dev FROM \`${name}\`.fcctl_schema_version`).catch(() => [[]]);
      rows.push((r as Array<{ is_dev: number }>)[0]?.is_dev ?? null);
    }
    return rows;
  };
  devmarkTest.beforeAll(({ dbs }) => {
    own = dbs;
  });

  devmarkTest('a database without the schema: creates it and marks it', async () => {
    const r = await init(['--side', 'fc', '--dev']);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(await marks()).toEqual([1, null]);
  });

  devmarkTest('an empty schema not marked: marks it', async () => {
    expect((await init(['--side', 'sh'])).code).toBe(0);
    expect(await marks()).toEqual([1, 0]);
    const r = await init(['--side', 'sh', '--dev']);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(await marks()).toEqual([1, 1]);
  });

  devmarkTest(
    'a marked database holding data stays markable; one side holding data and not marked refuses both sides',
    async () => {
      await insertRegistry(own.admin, own.fcName);
      expect((await init(['--side', 'fc', '--dev'])).code).toBe(0);
      // FC empty and unmarked (a successful run would mark it), SH unmarked and holding one command
      await own.admin.query(`DELETE FROM \`${own.fcName}\`.application_info`);
      await own.admin.query(`UPDATE \`${own.fcName}\`.fcctl_schema_version SET is_dev = 0`);
      await own.admin.query(`UPDATE \`${own.shName}\`.fcctl_schema_version SET is_dev = 0`);
      await insertCommands(own.admin, own.shName, [{ bizId: uniquePrefix('dev') }]);
      const r = await expectRefused(own, {
        name: 'db init --side all --dev: SH holds data and is not marked',
        argv: ['db', 'init', '--side', 'all', '--dev'],
        code: 4,
        says: /the SH database holds rows \(service_apply, flow_apply_command\) and is not marked already/,
      });
      expect(r.stdout).toBe('');
      // checked before any write: the FC side, which alone would be allowed, was not marked either
      expect(await marks()).toEqual([0, 0]);
    },
  );

  devmarkTest('dev seed --replace refuses an unmarked FC database holding data and deletes nothing', async () => {
    await insertRegistry(own.admin, own.fcName);
    const r = await expectRefused(own, {
      name: 'dev seed --replace on an unmarked FC database holding data',
      argv: ['dev', 'seed', '--replace', '--answers', '3'],
      code: 4,
      says: /not marked as a development database/,
    });
    expect(r.stdout).toBe('');
    const [rows] = await own.admin.query(`SELECT COUNT(*) AS n FROM \`${own.fcName}\`.application_info`);
    expect(Number((rows as Array<{ n: string }>)[0]!.n)).toBe(1);
  });
});
