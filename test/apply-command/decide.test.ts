import { createHmac } from 'node:crypto';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  APPLY_RETRY_POLICY,
  DONE_BRANCHES,
  errorVerdict,
  idleAfterPass,
  isReasonCode,
  planWrite,
  refusesCredentials,
  resolve,
  signatureAccepted,
  type Step,
  type Transition,
} from '../../src/lib/apply-command/resolve-unknown/decide.js';
import {
  claimSelect,
  claimStartSelect,
  compileWrite,
  otherAppKeySelect,
  peekSelect,
} from '../../src/lib/apply-command/resolve-unknown/sql.js';
import type { ApplyCommandRow } from '../../src/lib/apply-command/types.js';
import { durationArg } from '../../src/commands/options.js';
import {
  APPLY_BRANCHES,
  applyBody,
  type ApplyResult,
  type FlowInstance,
  type LookupResult,
  parseApplyBody,
  parseExactJson,
  parseLookupBody,
} from '../../src/lib/flow/client.js';
import {
  canonicalQuery,
  EMPTY_BODY_SHA256,
  signature,
  signedHeaders,
  stringToSign,
  verifySignature,
} from '../../src/lib/flow/sign.js';

const row = (over: Partial<ApplyCommandRow> = {}): ApplyCommandRow => ({
  id: '7',
  biz_type: 'honor_apply',
  biz_id: 'A-1',
  apply_app_key: '100021',
  submitter_id: '9007199254740993',
  flow_guid: 'guid-1',
  request_token: 'tok-1',
  attempt: 2,
  state: 'UNKNOWN',
  retry_count: 0,
  create_time: '2026-10-21 10:00:00',
  ...over,
});
const R = row();
const instance = (over: Partial<FlowInstance> = {}): FlowInstance => ({
  instanceId: 'FI-9',
  bizType: R.biz_type,
  bizId: R.biz_id,
  status: 30,
  applyAppKey: R.apply_app_key,
  submitterId: R.submitter_id,
  flowGuid: R.flow_guid,
  round: 2,
  ...over,
});

// ---------------------------------------------------------------- every lookup × every apply answer

const lookups: Array<[string, LookupResult]> = [
  ...([10, 20, 30, 40] as const).map((status): [string, LookupResult] => [
    `found owned ${status}`,
    { kind: 'found', instance: instance({ status }) },
  ]),
  ['found owned, earlier round', { kind: 'found', instance: instance({ status: 30, round: 1 }) }],
  ['found owned, round unknown', { kind: 'found', instance: instance({ status: 40, round: null }) }],
  ['found, other app key', { kind: 'found', instance: instance({ applyAppKey: '100099' }) }],
  ['found, other submitter', { kind: 'found', instance: instance({ submitterId: '9007199254740992' }) }],
  ['found, other flowGuid', { kind: 'found', instance: instance({ flowGuid: 'guid-2' }) }],
  [
    'found, nothing matches',
    { kind: 'found', instance: instance({ applyAppKey: 'x', submitterId: '1', flowGuid: 'y', status: 10 }) },
  ],
  ['not found', { kind: 'not-found' }],
  ['timeout', { kind: 'timeout', detail: 'no answer' }],
  ['network, refused', { kind: 'network', detail: 'ECONNREFUSED' }],
  ['network, name not resolved', { kind: 'network', detail: 'ENOTFOUND' }],
  ['network, reset', { kind: 'network', detail: 'ECONNRESET' }],
  ['http 401', { kind: 'http', status: 401, detail: 'sig' }],
  ['http 404', { kind: 'http', status: 404, detail: 'no route' }],
  ['http 500', { kind: 'http', status: 500, detail: '' }],
  ['http 503', { kind: 'http', status: 503, detail: '' }],
  ['malformed', { kind: 'malformed', detail: 'bad' }],
];
const applies: Array<[string, ApplyResult | undefined]> = [
  ['no apply', undefined],
  ...APPLY_BRANCHES.map((branch): [string, ApplyResult] => [
    `${branch} owned`,
    { kind: 'applied', branch, instance: instance({ status: 10 }) },
  ]),
  ...APPLY_BRANCHES.map((branch): [string, ApplyResult] => [
    `${branch} foreign`,
    { kind: 'applied', branch, instance: instance({ flowGuid: 'other', status: 10 }) },
  ]),
  // well-formed answers with a branch outside the seven (issue 17): an answer, never an error
  ...['MAYBE_CREATED', 'created', 'CREATED ', 'X'.repeat(40), '分支'].flatMap(
    (branch): Array<[string, ApplyResult]> => [
      [
        `unknown branch ${JSON.stringify(branch)} owned`,
        { kind: 'unknown-branch', branch, instance: instance({ status: 10 }) },
      ],
      [
        `unknown branch ${JSON.stringify(branch)} foreign`,
        { kind: 'unknown-branch', branch, instance: instance({ submitterId: '1', status: 10 }) },
      ],
      // no usable instance: still an answer with a branch, never malformed
      [
        `unknown branch ${JSON.stringify(branch)} without instance`,
        { kind: 'unknown-branch', branch, instance: null, problem: 'instance is not an object' },
      ],
    ],
  ),
  ['apply timeout', { kind: 'timeout', detail: '' }],
  ['apply network', { kind: 'network', detail: 'UND_ERR_SOCKET' }],
  ['apply refused', { kind: 'network', detail: 'ECONNREFUSED' }],
  ['apply 400', { kind: 'http', status: 400, detail: '' }],
  ['apply 409', { kind: 'http', status: 409, detail: 'OWNERSHIP' }],
  ['apply 500', { kind: 'http', status: 500, detail: '' }],
  ['apply 502', { kind: 'http', status: 502, detail: '' }],
  ['apply malformed', { kind: 'malformed', detail: 'x' }],
];

const code = (r: { kind: string; status?: number }) => (r.kind === 'http' ? `HTTP_${r.status}` : r.kind.toUpperCase());
/** Not charged to the budget: only a request that never reached the flow center. */
const isCharged = (r: { kind: string; detail?: string }) =>
  !(
    r.kind === 'network' &&
    ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'].includes(r.detail ?? '')
  );

/** The oracle: SPEC §9 written out as a table, independently of decide.ts. */
function expected(lookup: LookupResult, apply: ApplyResult | undefined): Record<string, unknown> {
  if (lookup.kind === 'found') {
    const i = lookup.instance;
    const owned = i.applyAppKey === R.apply_app_key && i.submitterId === R.submitter_id && i.flowGuid === R.flow_guid;
    return owned
      ? { kind: 'done', via: 'lookup', status: i.status }
      : { kind: 'dead', reason: 'OWNERSHIP_MISMATCH', branch: null };
  }
  if (lookup.kind !== 'not-found')
    return { kind: 'fail', reason: `LOOKUP_${code(lookup)}`, charged: isCharged(lookup) };
  if (apply === undefined) return { kind: 'post' };
  if (apply.kind !== 'applied' && apply.kind !== 'unknown-branch')
    return { kind: 'fail', reason: `APPLY_${code(apply)}`, charged: isCharged(apply) };
  if (apply.instance === null) return { kind: 'dead', reason: 'UNEXPECTED_BRANCH', branch: apply.branch };
  if (apply.instance.flowGuid !== R.flow_guid || apply.instance.submitterId !== R.submitter_id)
    return { kind: 'dead', reason: 'OWNERSHIP_MISMATCH', branch: apply.branch };
  if (
    apply.kind === 'applied' &&
    ['CREATED', 'SAME_REQUEST', 'IDEMPOTENT', 'CONCURRENT_CREATED'].includes(apply.branch)
  )
    return { kind: 'done', via: 'apply', status: apply.instance.status, branch: apply.branch };
  return { kind: 'dead', reason: 'UNEXPECTED_BRANCH', branch: apply.branch };
}

function shape(step: Step): Record<string, unknown> {
  switch (step.kind) {
    case 'post':
      return { kind: 'post' };
    case 'done':
      return step.via === 'apply'
        ? { kind: 'done', via: 'apply', status: step.instance.status, branch: step.branch }
        : { kind: 'done', via: 'lookup', status: step.instance.status };
    case 'dead':
      return { kind: 'dead', reason: step.reason, branch: step.branch };
    case 'fail':
      return { kind: 'fail', reason: step.reason, charged: step.charged };
  }
}

describe('resolve: every lookup result × every apply answer (SPEC §9)', () => {
  for (const [ln, lookup] of lookups) {
    for (const [an, apply] of applies) {
      it(`${ln} / ${an}`, () => {
        const step = apply === undefined ? resolve(R, lookup) : resolve(R, lookup, apply);
        expect(shape(step)).toEqual(expected(lookup, apply));
        // Never an apply after a lookup that found something or failed.
        if (step.kind === 'post') expect(lookup.kind).toBe('not-found');
        // Never DONE without an instance the flow center described.
        if (step.kind === 'done') {
          const source = step.via === 'lookup' ? lookup : apply;
          expect(source && 'instance' in source ? source.instance : null).toBe(step.instance);
        }
      });
    }
  }

  it('a post carries the row own token and attempt, exactly', () => {
    const step = resolve(R, { kind: 'not-found' });
    expect(step).toEqual({
      kind: 'post',
      request: {
        bizType: 'honor_apply',
        bizId: 'A-1',
        applyAppKey: '100021',
        submitterId: '9007199254740993',
        flowGuid: 'guid-1',
        requestToken: 'tok-1',
        attempt: 2,
      },
    });
  });
  it('a command that cannot be resent safely is DEAD, not posted', () => {
    for (const bad of [row({ request_token: '' }), row({ attempt: 0 }), row({ submitter_id: 'abc' })]) {
      expect(resolve(bad, { kind: 'not-found' })).toMatchObject({ kind: 'dead', reason: 'INVALID_COMMAND' });
      // …but a found instance still settles it: the lookup needs no token.
      expect(
        resolve(bad, { kind: 'found', instance: instance({ submitterId: String(bad.submitter_id) }) }),
      ).toMatchObject({ kind: 'done' });
    }
  });
  it('flags an owned instance in an earlier round than the attempt, and still never posts', () => {
    const t = resolve(R, { kind: 'found', instance: instance({ status: 30, round: 1 }) }) as Transition;
    expect(t).toMatchObject({ kind: 'done', via: 'lookup', roundBehind: true });
    expect(planWrite(R, t, APPLY_RETRY_POLICY).write).toMatchObject({
      kind: 'done',
      note: expect.stringMatching(/^ROUND_BEHIND: /),
    });
  });
  it('types: only a lookup-only call can ask for a post', () => {
    expectTypeOf(resolve(R, { kind: 'not-found' })).toEqualTypeOf<Step>();
    expectTypeOf(resolve(R, { kind: 'not-found' }, { kind: 'timeout', detail: '' })).toEqualTypeOf<Transition>();
    expectTypeOf<Extract<Transition, { kind: 'post' }>>().toBeNever();
  });
  it('the DONE branches are exactly CREATED, SAME_REQUEST, IDEMPOTENT, CONCURRENT_CREATED', () => {
    expect([...DONE_BRANCHES].sort()).toEqual(['CONCURRENT_CREATED', 'CREATED', 'IDEMPOTENT', 'SAME_REQUEST']);
  });
});

describe('planWrite: backoff 20 s × 2^n, DEAD at the 6th failure', () => {
  it('doubles and dies', () => {
    const fail: Transition = { kind: 'fail', reason: 'LOOKUP_TIMEOUT', detail: 'no answer', charged: true };
    const seen = [0, 1, 2, 3, 4, 5].map((n) => planWrite(row({ retry_count: n }), fail, APPLY_RETRY_POLICY).write);
    expect(seen.map((w) => (w.kind === 'fail' ? [w.state, w.retryCount, w.backoffSeconds] : null))).toEqual([
      ['FAILED', 1, 20],
      ['FAILED', 2, 40],
      ['FAILED', 3, 80],
      ['FAILED', 4, 160],
      ['FAILED', 5, 320],
      ['DEAD', 6, null],
    ]);
    expect(seen[0]).toMatchObject({ lastError: 'LOOKUP_TIMEOUT: no answer' });
  });
  it('a flow center that could not be reached fails the row with backoff but never spends its budget (never DEAD from an outage)', () => {
    const refused = resolve(R, { kind: 'network', detail: 'ECONNREFUSED' }) as Transition;
    expect(refused).toMatchObject({ kind: 'fail', reason: 'LOOKUP_NETWORK', charged: false });
    const seen = [0, 1, 5].map((n) => planWrite(row({ retry_count: n }), refused, APPLY_RETRY_POLICY));
    expect(
      seen.map((p) => (p.write.kind === 'fail' ? [p.write.state, p.write.retryCount, p.write.backoffSeconds] : null)),
    ).toEqual([
      ['FAILED', 0, 20],
      ['FAILED', 1, 40],
      ['FAILED', 5, 640],
    ]);
    expect(seen.every((p) => p.result.kind === 'failed' && !p.result.dead)).toBe(true);
    // a connection cut once the request was out may have reached it: charged
    expect(
      planWrite(
        row({ retry_count: 5 }),
        resolve(R, { kind: 'network', detail: 'ECONNRESET' }) as Transition,
        APPLY_RETRY_POLICY,
      ).write,
    ).toMatchObject({ state: 'DEAD', retryCount: 6 });
  });
  it('a done write mirrors the status and keeps the branch; a DONE by lookup clears last_branch', () => {
    const viaApply = planWrite(
      R,
      { kind: 'done', via: 'apply', branch: 'CREATED', instance: instance({ status: 10 }), roundBehind: false },
      APPLY_RETRY_POLICY,
    );
    expect(viaApply.write).toMatchObject({
      kind: 'done',
      status: 10,
      instanceId: 'FI-9',
      branch: 'CREATED',
      note: null,
      mirror: { status: 10, claimed: { exists: false, status: null } },
    });
    // the value read at claim is what the mirror is written over
    const claimed = planWrite(
      row({ mirror: { exists: true, status: 20, id: '3' } }),
      { kind: 'done', via: 'lookup', instance: instance({ status: 30 }), roundBehind: false },
      APPLY_RETRY_POLICY,
    );
    expect(claimed.write).toMatchObject({
      mirror: {
        status: 30,
        claimed: { exists: true, status: 20, id: '3' },
        changedNote: expect.stringMatching(
          /^MIRROR_CHANGED: service_apply\.flow_status was 20 at claim and has changed since/,
        ),
        deletedNote:
          'MIRROR_CHANGED: the service_apply row (flow_status 20 at claim) has been deleted since; status 30 of instance FI-9 status 30 was not mirrored',
      },
    });
    const viaLookup = planWrite(
      R,
      { kind: 'done', via: 'lookup', instance: instance({ status: 40 }), roundBehind: false },
      APPLY_RETRY_POLICY,
    );
    expect(viaLookup.write).toMatchObject({ kind: 'done', status: 40, branch: null });
    const sql = compileWrite('me', viaLookup.write);
    expect(sql.sql).toContain('c.last_branch = ?');
    expect(sql.sql).not.toContain('c.last_branch = c.last_branch');
    expect(sql.params[sql.sql.slice(0, sql.sql.indexOf('c.last_branch = ?')).split('?').length - 1]).toBeNull();
  });
  it('a dead write keeps the branch for a person', () => {
    const p = planWrite(
      R,
      { kind: 'dead', reason: 'UNEXPECTED_BRANCH', branch: 'RESTARTED', detail: 'RESTARTED, instance FI-9 status 10' },
      APPLY_RETRY_POLICY,
    );
    expect(p.write).toEqual({
      kind: 'dead',
      gen: { id: '7', state: 'UNKNOWN', retryCount: 0, attempt: 2, requestToken: 'tok-1' },
      branch: 'RESTARTED',
      lastError: 'UNEXPECTED_BRANCH: RESTARTED, instance FI-9 status 10',
    });
  });
  it('an unknown branch is DEAD UNEXPECTED_BRANCH, kept whole in last_error and cut to 32 characters in last_branch', () => {
    const long = `MAYBE_${'分'.repeat(40)}\n😀`;
    const t = resolve(
      R,
      { kind: 'not-found' },
      { kind: 'unknown-branch', branch: long, instance: instance({ status: 10 }) },
    );
    expect(t).toMatchObject({ kind: 'dead', reason: 'UNEXPECTED_BRANCH', branch: long });
    const p = planWrite(R, t, APPLY_RETRY_POLICY);
    expect(p.write).toMatchObject({ kind: 'dead', branch: `MAYBE_${'分'.repeat(26)}` });
    expect(p.result).toEqual({ kind: 'dead', reason: 'UNEXPECTED_BRANCH', branch: `MAYBE_${'分'.repeat(26)}` });
    const lastError = p.write.kind === 'dead' ? p.write.lastError : '';
    expect(lastError).toBe(
      `UNEXPECTED_BRANCH: ${JSON.stringify(long)} (not a branch code of seed 000 §7.4), instance FI-9 status 10`,
    );
    // a surrogate pair is never split by a cut
    const emoji = planWrite(
      R,
      { kind: 'dead', reason: 'UNEXPECTED_BRANCH', branch: `${'A'.repeat(31)}😀`, detail: '' },
      APPLY_RETRY_POLICY,
    ).write;
    expect(emoji).toMatchObject({ branch: `${'A'.repeat(31)}😀` });
    const cut = planWrite(
      R,
      { kind: 'dead', reason: 'UNEXPECTED_BRANCH', branch: `${'A'.repeat(32)}😀`, detail: '😀'.repeat(600) },
      APPLY_RETRY_POLICY,
    ).write;
    expect(cut).toMatchObject({ branch: 'A'.repeat(32) });
    expect(cut.kind === 'dead' && [...cut.lastError].length).toBe(512);
    expect(cut.kind === 'dead' && cut.lastError.endsWith('😀')).toBe(true);
  });
  it('an unknown branch without a valid instance: DEAD UNEXPECTED_BRANCH with the branch and the problem kept', () => {
    const t = resolve(
      R,
      { kind: 'not-found' },
      { kind: 'unknown-branch', branch: 'REJECTED_BY_GUARD', instance: null, problem: 'instance is not an object' },
    );
    const p = planWrite(R, t, APPLY_RETRY_POLICY);
    expect(p.write).toMatchObject({
      kind: 'dead',
      branch: 'REJECTED_BY_GUARD',
      lastError:
        'UNEXPECTED_BRANCH: "REJECTED_BY_GUARD" (not a branch code of seed 000 §7.4), no valid instance (instance is not an object)',
    });
  });
  it('isReasonCode: the codes fcctl writes before the colon of last_error, and nothing else', () => {
    for (const c of [
      'OWNERSHIP_MISMATCH',
      'UNEXPECTED_BRANCH',
      'INVALID_COMMAND',
      'LOOKUP_TIMEOUT',
      'APPLY_NETWORK',
      'LOOKUP_MALFORMED',
      'APPLY_HTTP_503',
      'LOOKUP_HTTP_401',
    ])
      expect(isReasonCode(c), c).toBe(true);
    for (const c of [
      '',
      'DEAD',
      'ROUND_BEHIND',
      'MIRROR_CHANGED',
      'LOOKUP_HTTP_',
      'APPLY_HTTP_5033',
      'lookup_timeout',
      'LOOKUP_TIMEOUT ',
      "'; DROP TABLE x; --",
      '%',
    ])
      expect(isReasonCode(c), c).toBe(false);
  });
});

describe('refusesCredentials: a 401 always stops the run, a 403 only before anything signed was accepted', () => {
  const http = (status: number): ApplyResult => ({ kind: 'http', status, detail: '' });
  const answers: Array<[string, LookupResult | ApplyResult, boolean]> = [
    // [answer, signature accepted]
    ['found', { kind: 'found', instance: instance() }, true],
    ['not found', { kind: 'not-found' }, true],
    ['applied', { kind: 'applied', branch: 'CREATED', instance: instance() }, true],
    ['unknown branch', { kind: 'unknown-branch', branch: 'X', instance: instance() }, true],
    ['http 204', http(204), true],
    ['http 401', http(401), false],
    ['http 403', http(403), false],
    ['http 404', http(404), false],
    ['http 429', http(429), false],
    ['http 500', http(500), false],
    ['timeout', { kind: 'timeout', detail: '' }, false],
    ['network', { kind: 'network', detail: 'ECONNRESET' }, false],
    ['malformed (may be an oversized refusal)', { kind: 'malformed', detail: '' }, false],
  ];
  it.each(answers)('%s: signatureAccepted', (_n, a, want) => expect(signatureAccepted(a)).toBe(want));
  const refuses = (a: LookupResult | ApplyResult, before: boolean) =>
    a.kind === 'http' && (a.status === 401 || (a.status === 403 && !before));
  for (const before of [false, true]) {
    it.each(answers)(`%s, accepted before ${before}: refuses only 401, or 403 before any acceptance`, (_n, a) =>
      expect(refusesCredentials(a, before)).toBe(refuses(a, before)),
    );
  }
  it('the two 403 cases, spelled out', () => {
    expect(refusesCredentials(http(403), false)).toBe(true);
    expect(refusesCredentials(http(403), true)).toBe(false);
    expect(refusesCredentials(http(401), true)).toBe(true);
    // a 403 that is the row's is an ordinary charged failure
    const t = resolve(R, { kind: 'not-found' }, http(403));
    expect(t).toEqual({ kind: 'fail', reason: 'APPLY_HTTP_403', detail: '', charged: true });
    expect(planWrite(row({ retry_count: 2 }), t, APPLY_RETRY_POLICY).write).toMatchObject({
      kind: 'fail',
      state: 'FAILED',
      retryCount: 3,
      backoffSeconds: 80,
    });
  });
});

describe("errorVerdict: an error is the row's while the flow center answers others, an outage when it answers nothing (issue 34 §1)", () => {
  const table: Array<[boolean, boolean, boolean, boolean, 'row' | 'outage' | 'probe']> = [
    // answeredSince, probeFailed, tripped, leaseCovers → verdict
    [true, false, false, true, 'row'], // another row answered: SPEC §9, FAILED and charged
    [true, true, false, true, 'row'], // answered since, whatever the readiness lookup said
    [true, false, true, false, 'row'],
    [false, false, false, true, 'probe'], // nothing tells yet: ask the readiness lookup
    [false, true, false, true, 'outage'], // the readiness lookup failed too: every request fails
    [false, true, false, false, 'outage'],
    [false, false, true, true, 'outage'], // the run tripped already (another row's outage, the streak)
    [false, false, true, false, 'outage'],
    [false, false, false, false, 'row'], // no lease left for the readiness lookup: charged as a batch run charges it
  ];
  it.each(table)(
    'answeredSince %s, probeFailed %s, tripped %s, leaseCovers %s → %s',
    (answeredSince, probeFailed, tripped, leaseCovers, want) =>
      expect(errorVerdict({ answeredSince, probeFailed, tripped, leaseCovers })).toBe(want),
  );
});

describe('idleAfterPass: a pass that claimed nothing waits the poll interval (issue 34 §2)', () => {
  it.each([
    [0, true], // due rows locked by another transaction, or taken by another resolver
    [1, false],
    [100, false],
  ])('claimed %i → %s', (claimed, want) => expect(idleAfterPass({ claimed })).toBe(want));
});

describe('SQL builders', () => {
  it('claims UNKNOWN/due FAILED/old PENDING of the app key, unclaimed or lease expired, oldest first, SKIP LOCKED', () => {
    const q = claimSelect('100021', 600, '41', 50);
    expect(q.sql).toBe(
      'SELECT id, biz_type, biz_id, apply_app_key, submitter_id, flow_guid, request_token, attempt, state, retry_count, create_time FROM flow_apply_command WHERE ' +
        "((state IN ('UNKNOWN', 'FAILED') AND (next_retry_at IS NULL OR next_retry_at <= NOW())) OR (state = 'PENDING' AND create_time <= NOW() - INTERVAL ? SECOND)) " +
        'AND apply_app_key = ? AND (claim_owner IS NULL OR claim_expires_at IS NULL OR claim_expires_at < NOW()) AND id > ? ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED',
    );
    expect(q.params).toEqual([600, '100021', '41', 50]);
    expect(claimStartSelect('k', 60).sql).toContain('FORCE INDEX (idx_apply_command_due)');
    expect(claimStartSelect('k', 60).sql).toContain('apply_app_key = ?');
    expect(claimStartSelect('k', 60).params).toEqual([60, 'k']);
    expect(peekSelect('k', 60, '9', 10).sql).not.toContain('FOR UPDATE');
    expect(otherAppKeySelect('k', 60).sql).toContain('apply_app_key <> ?');
  });
  it('every write is guarded by claim owner, state, retry count, attempt and request token', () => {
    const gen = { id: '7', state: 'UNKNOWN' as const, retryCount: 3, attempt: 2, requestToken: 'tok-1' };
    for (const w of [
      { kind: 'release' as const, gen },
      { kind: 'dead' as const, gen, branch: null, lastError: 'x' },
      { kind: 'fail' as const, gen, state: 'FAILED' as const, retryCount: 4, backoffSeconds: 160, lastError: 'x' },
      {
        kind: 'done' as const,
        gen,
        status: 30,
        instanceId: 'i',
        branch: null,
        note: null,
        mirror: {
          status: 30,
          claimed: { exists: true, status: null, id: '5' },
          changedNote: 'MIRROR_CHANGED: x',
          deletedNote: 'MIRROR_CHANGED: d',
        },
      },
      {
        kind: 'done' as const,
        gen,
        status: 30,
        instanceId: 'i',
        branch: null,
        note: null,
        mirror: {
          status: 30,
          claimed: { exists: false, status: null, id: null },
          changedNote: 'MIRROR_CHANGED: x',
          deletedNote: 'MIRROR_CHANGED: d',
        },
      },
    ]) {
      const c = compileWrite('owner-1', w);
      expect(c.sql).toMatch(
        /WHERE (c\.)?id = \? AND (c\.)?claim_owner = \? AND (c\.)?state = \? AND (c\.)?retry_count = \? AND (c\.)?attempt = \? AND (c\.)?request_token = \?$/,
      );
      expect(c.params.slice(-6)).toEqual(['7', 'owner-1', 'UNKNOWN', 3, 2, 'tok-1']);
    }
    // DONE and the mirror are one statement: the mirror only happens when the guard holds, and
    // only into the row read at claim, over the status read then; s2 tells changed from deleted.
    const notes = { changedNote: 'MIRROR_CHANGED: x', deletedNote: 'MIRROR_CHANGED: d' };
    const done = compileWrite('o', {
      kind: 'done',
      gen,
      status: 30,
      instanceId: 'i',
      branch: 'CREATED',
      note: null,
      mirror: { status: 30, claimed: { exists: true, status: 10, id: '55' }, ...notes },
    });
    expect(done.sql).toBe(
      'UPDATE flow_apply_command c LEFT JOIN service_apply s ON s.id = ? AND s.biz_type = c.biz_type AND s.biz_id = c.biz_id AND s.flow_status <=> ? LEFT JOIN service_apply s2 ON s2.id = ? ' +
        "SET c.state = 'DONE', c.remote_status = ?, c.remote_instance_id = ?, c.last_branch = ?, c.last_error = CASE WHEN s.id IS NOT NULL THEN ? WHEN s2.id IS NULL THEN ? ELSE ? END, " +
        'c.next_retry_at = NULL, c.claim_owner = NULL, c.claim_expires_at = NULL, c.update_time = NOW(), s.flow_status = ?, s.update_time = NOW() ' +
        'WHERE c.id = ? AND c.claim_owner = ? AND c.state = ? AND c.retry_count = ? AND c.attempt = ? AND c.request_token = ?',
    );
    expect(done.params).toEqual([
      '55',
      10,
      '55',
      30,
      'i',
      'CREATED',
      null,
      'MIRROR_CHANGED: d',
      'MIRROR_CHANGED: x',
      30,
      '7',
      'o',
      'UNKNOWN',
      3,
      2,
      'tok-1',
    ]);
    // no service_apply row at claim: the command alone, service_apply is not touched (nor one inserted since)
    const missing = compileWrite('o', {
      kind: 'done',
      gen,
      status: 30,
      instanceId: 'i',
      branch: null,
      note: 'ROUND_BEHIND: y',
      mirror: { status: 30, claimed: { exists: false, status: null, id: null }, ...notes },
    });
    expect(missing.sql).not.toContain('service_apply');
    expect(missing.params.slice(0, 4)).toEqual([30, 'i', null, 'ROUND_BEHIND: y']);
  });
});

describe('signing (docs/flow-center.md)', () => {
  const input = {
    method: 'GET',
    path: '/oapi/flow/instance',
    query: canonicalQuery([
      ['bizType', 'honor_apply'],
      ['bizId', 'A-1'],
    ]),
    appKey: '100021',
    timestamp: '1792540800',
    nonce: '0123456789abcdef0123456789abcdef',
    contentSha256: EMPTY_BODY_SHA256,
  };
  it('the documented string to sign and signature', () => {
    expect(stringToSign(input)).toBe(
      'FC-HMAC-SHA256\nGET\n/oapi/flow/instance\nbizId=A-1&bizType=honor_apply\n100021\n1792540800\n0123456789abcdef0123456789abcdef\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
    const independent = createHmac('sha256', 'example-secret').update(stringToSign(input)).digest('hex');
    expect(signature('example-secret', input)).toBe(independent);
    expect(signature('example-secret', input)).toBe('0a0999b341514cddc9ba9798fac868a19760c1ae93c329ceaff00c9f38f58289');
    expect(verifySignature('example-secret', input, independent)).toBe(true);
    expect(verifySignature('other', input, independent)).toBe(false);
  });
  it('canonical query: RFC 3986, sorted by name then value', () => {
    expect(
      canonicalQuery([
        ['b', '2'],
        ['a', 'x y'],
        ['a', 'é/*'],
        ['A', "!'()"],
      ]),
    ).toBe('A=%21%27%28%29&a=%C3%A9%2F%2A&a=x%20y&b=2');
  });
  it('headers carry no secret', () => {
    const h = signedHeaders({
      method: 'POST',
      path: '/oapi/flow/apply',
      query: '',
      appKey: '100021',
      body: '{}',
      secret: 'very-secret-value',
      nowSeconds: 1792540800.9,
      nonce: 'ab'.repeat(16),
    });
    expect(Object.keys(h)).toEqual([
      'X-FC-App-Key',
      'X-FC-Timestamp',
      'X-FC-Nonce',
      'X-FC-Content-SHA256',
      'X-FC-Signature',
    ]);
    expect(h['X-FC-Timestamp']).toBe('1792540800');
    expect(JSON.stringify(h)).not.toContain('very-secret-value');
  });
});

describe('response bodies, validated strictly', () => {
  const key = { bizType: 'honor_apply', bizId: 'A-1' };
  const inst =
    '{"instanceId":"FI-1","bizType":"honor_apply","bizId":"A-1","status":30,"applyAppKey":"100021","submitterId":9007199254740993,"flowGuid":"g","round":1}';
  it('keeps BIGINT submitter ids exact', () => {
    expect(parseExactJson('{"a":9007199254740993,"b":"9007199254740993","c":1.5,"d":-12345678901234567}')).toEqual({
      ok: true,
      value: { a: '9007199254740993', b: '9007199254740993', c: 1.5, d: '-12345678901234567' },
    });
    expect(parseLookupBody(`{"found":true,"instance":${inst}}`, key)).toMatchObject({
      kind: 'found',
      instance: { submitterId: '9007199254740993', status: 30, round: 1 },
    });
  });
  it('a leading byte order mark is skipped (bytes or text), never thrown: a gateway that adds one breaks nothing', () => {
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`{"found":true,"instance":${inst}}`)]);
    expect(parseLookupBody(bom, key)).toMatchObject({ kind: 'found', instance: { submitterId: '9007199254740993' } });
    expect(parseLookupBody('\uFEFF{"found":false}', key)).toEqual({ kind: 'not-found' });
    expect(
      parseApplyBody(
        Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`{"branch":"CREATED","instance":${inst}}`)]),
        key,
      ),
    ).toMatchObject({ kind: 'applied', branch: 'CREATED' });
    expect(parseLookupBody(Buffer.from([0xef, 0xbb, 0xbf]), key).kind).toBe('malformed');
  });
  it('refuses what it cannot trust', () => {
    const bad = [
      '{"found":tru',
      '',
      '[]',
      '{"found":"true"}',
      '{"found":false,"found":true}',
      '{"found":false,"instance":{}}',
      '{}',
      `{"found":true,"instance":${inst.replace('"status":30', '"status":50')}}`,
      `{"found":true,"instance":${inst.replace('"status":30', '"status":"30"')}}`,
      `{"found":true,"instance":${inst.replace('"bizId":"A-1"', '"bizId":"A-2"')}}`,
      `{"found":true,"instance":${inst.replace(',"flowGuid":"g"', '')}}`,
      `{"found":true,"instance":${inst.replace('9007199254740993', '1.5')}}`,
      `{"found":true,"instance":${inst.replace('"round":1', '"round":0')}}`,
    ];
    for (const b of bad) expect(parseLookupBody(b, key).kind, b).toBe('malformed');
    expect(parseLookupBody('{"found":false}', key)).toEqual({ kind: 'not-found' });
    expect(parseLookupBody('{"found":false,"extra":1}', key)).toEqual({ kind: 'not-found' });
    expect(parseApplyBody(`{"branch":"CREATED","instance":${inst}}`, key)).toMatchObject({
      kind: 'applied',
      branch: 'CREATED',
    });
    expect(parseApplyBody('{"branch":"CREATED"}', key).kind).toBe('malformed');
  });
  it('a well-formed apply answer with a branch outside the seven is an answer (unknown-branch), not a malformed body', () => {
    expect(parseApplyBody(`{"branch":"MAYBE","instance":${inst}}`, key)).toMatchObject({
      kind: 'unknown-branch',
      branch: 'MAYBE',
      instance: { instanceId: 'FI-1', status: 30 },
    });
    expect(parseApplyBody(`{"branch":"created","instance":${inst}}`, key)).toMatchObject({
      kind: 'unknown-branch',
      branch: 'created',
    });
    // the branch is read first: an unknown one is kept whatever the instance (absent, null, invalid)
    const noInstance: Array<[string, string]> = [
      ['{"branch":"REJECTED_BY_GUARD"}', 'instance is not an object'],
      ['{"branch":"REJECTED_BY_GUARD","instance":null}', 'instance is not an object'],
      ['{"branch":"REJECTED_BY_GUARD","instance":[]}', 'instance is not an object'],
      [
        `{"branch":"REJECTED_BY_GUARD","instance":${inst.replace('"status":30', '"status":50')}}`,
        'instance.status 50 is not one of 10, 20, 30, 40',
      ],
      [
        `{"branch":"REJECTED_BY_GUARD","instance":${inst.replace('"bizId":"A-1"', '"bizId":"A-2"')}}`,
        'instance.bizId is not the one asked for',
      ],
    ];
    for (const [b, problem] of noInstance)
      expect(parseApplyBody(b, key), b).toEqual({
        kind: 'unknown-branch',
        branch: 'REJECTED_BY_GUARD',
        instance: null,
        problem,
      });
    // only a body that is not well formed is malformed: a known branch without a valid instance, a branch that is no text
    for (const b of [
      '{"branch":"CREATED"}',
      '{"branch":"SAME_REQUEST","instance":null}',
      `{"branch":"CREATED","instance":${inst.replace('"status":30', '"status":50')}}`,
      `{"branch":"","instance":${inst}}`,
      '{"branch":""}',
      `{"branch":7,"instance":${inst}}`,
      `{"branch":null,"instance":${inst}}`,
      `{"instance":${inst}}`,
      `{"branch":"A","branch":"B","instance":${inst}}`,
    ]) {
      expect(parseApplyBody(b, key).kind, b).toBe('malformed');
    }
  });
  it('the apply body writes the submitter id as a number literal, exactly', () => {
    expect(
      applyBody({
        bizType: 't',
        bizId: 'b',
        applyAppKey: 'k',
        submitterId: '9007199254740993',
        flowGuid: 'g',
        requestToken: 'r',
        attempt: 2,
      }),
    ).toBe(
      '{"bizType":"t","bizId":"b","applyAppKey":"k","submitterId":9007199254740993,"flowGuid":"g","requestToken":"r","attempt":2,"retryOnly":false}',
    );
  });
});

describe('durationArg', () => {
  const parse = durationArg(60, 30 * 86400);
  it('reads seconds, minutes, hours, days', () => {
    expect([parse('600'), parse('90s'), parse('10m'), parse('2h'), parse('1d')]).toEqual([600, 90, 600, 7200, 86400]);
  });
  for (const bad of ['abc', '', '10x', '-5m', '1.5h', '59', '31d']) {
    it(`refuses ${JSON.stringify(bad)}`, () => expect(() => parse(bad)).toThrow());
  }
});
