import { describe, expect, it } from 'vitest';
import {
  decideRequeue,
  isRefused,
  isTemporary,
  operationComplete,
  operationConflict,
  reasonCodeOf,
  type RecordedRequeue,
  type RequeueFacts,
  type RequeueRow,
  selectorOf,
} from '../../src/lib/apply-command/requeue/decide.js';
import { MAX_REQUEUE_ITEMS, parseRequeueFile, requeueTargetOf } from '../../src/lib/apply-command/requeue/input.js';
import { requeueSql } from '../../src/lib/apply-command/requeue/sql.js';

const KEY = { bizType: 'honor_apply', bizId: 'A-1' };
const row = (over: Partial<RequeueRow> = {}): RequeueRow => ({
  id: '7',
  biz_type: KEY.bizType,
  biz_id: KEY.bizId,
  state: 'DEAD',
  retry_count: 6,
  attempt: 2,
  request_token: 'tok-1',
  last_error: 'UNEXPECTED_BRANCH: RESTARTED, instance FI-9 status 10',
  last_branch: 'RESTARTED',
  remote_status: null,
  remote_instance_id: null,
  claim_owner: null,
  claim_expires_at: null,
  claim_live: 0,
  ...over,
});
const NAMED = selectorOf({ kind: 'key', key: KEY });
const DEAD_ALL = selectorOf({ kind: 'dead', reason: null });

// ---------------------------------------------------------------- the exhaustive table

const STATES = ['PENDING', 'UNKNOWN', 'DONE', 'FAILED', 'DEAD', 'BOGUS'] as const;
const CLAIMS = ['none', 'expired', 'live'] as const;
const MODES = ['named', 'dead'] as const;
/** the --reason filter (dead only): none, the row's own code, another code */
const FILTERS = ['none', 'same', 'other'] as const;
const PRIORS = ['none', 'same-selector', 'other-selector'] as const;

/**
 * The oracle, written as the table of issue 17 (independently of requeue.ts): DEAD — or FAILED
 * when named — and not under a live claim is REQUEUED; a recorded answer comes back unchanged;
 * every other state is refused with its reason.
 */
function expected(
  state: string,
  claim: string,
  mode: string,
  filter: string,
  prior: string,
  exists: boolean,
  execute: boolean,
): { code: string; repeated: boolean; write: boolean } {
  if (prior === 'same-selector') return { code: 'NOT_REQUEUABLE', repeated: true, write: false };
  if (prior === 'other-selector') return { code: 'OPERATION_CONFLICT', repeated: false, write: false };
  if (!exists) return { code: 'NO_COMMAND', repeated: false, write: false };
  const requeuable = state === 'DEAD' || (state === 'FAILED' && mode === 'named');
  if (!requeuable) return { code: 'NOT_REQUEUABLE', repeated: false, write: false };
  if (mode === 'dead' && filter === 'other') return { code: 'NOT_REQUEUABLE', repeated: false, write: false };
  if (claim === 'live') return { code: 'CLAIMED', repeated: false, write: false };
  // a dry run's requeue never reads as done; the write comes along only as evidence of what it would do
  return { code: execute ? 'REQUEUED' : 'WOULD_REQUEUE', repeated: false, write: true };
}

const cases: Array<[string, RequeueFacts, ReturnType<typeof expected>]> = [];
for (const execute of [true, false])
  for (const mode of MODES) {
    for (const filter of mode === 'dead' ? FILTERS : (['none'] as const)) {
      for (const prior of PRIORS) {
        for (const exists of [true, false]) {
          for (const state of exists ? STATES : (['-'] as const)) {
            for (const claim of exists ? CLAIMS : (['none'] as const)) {
              const r = exists
                ? row({
                    state,
                    claim_owner: claim === 'none' ? null : 'host:1:abc',
                    claim_expires_at: claim === 'none' ? null : '2026-10-21 10:05:00',
                    claim_live: claim === 'live' ? 1 : 0,
                  })
                : null;
              const selector = mode === 'named' ? NAMED : DEAD_ALL;
              const recorded: RecordedRequeue | null =
                prior === 'none'
                  ? null
                  : {
                      selector: 'x',
                      selectorSha256: prior === 'same-selector' ? selector.sha256 : 'f'.repeat(64),
                      code: 'NOT_REQUEUABLE',
                      reason: 'UNKNOWN: first answer',
                      commandId: '7',
                    };
              const facts: RequeueFacts = {
                mode,
                execute,
                reasonFilter: filter === 'none' ? null : filter === 'same' ? 'UNEXPECTED_BRANCH' : 'LOOKUP_TIMEOUT',
                key: KEY,
                selector,
                prior: recorded,
                row: r,
              };
              cases.push([
                `${execute ? 'execute' : 'dry-run'} ${mode} filter=${filter} prior=${prior} ${exists ? `${state} claim=${claim}` : 'no row'}`,
                facts,
                expected(state, claim, mode, filter, prior, exists, execute),
              ]);
            }
          }
        }
      }
    }
  }

describe('decideRequeue: every state × claim × mode × --reason × recorded answer', () => {
  // execute/dry run × (named + dead × 3 filters) × 3 recorded answers × (6 states × 3 claims + no row)
  it('covers the whole table', () => expect(cases).toHaveLength(2 * (1 + 3) * 3 * (6 * 3 + 1)));
  it.each(cases)('%s', (_name, facts, want) => {
    const d = decideRequeue(facts);
    expect({ code: d.code, repeated: d.repeated, write: d.write !== undefined }).toEqual(want);
    expect(isRefused(d.code)).toBe(d.code !== 'REQUEUED' && d.code !== 'WOULD_REQUEUE');
    if (!facts.execute && !d.repeated) expect(d.code === 'REQUEUED' || /^UNKNOWN again/.test(d.reason)).toBe(false);
    if (d.write) {
      // the write carries the generation as read and keeps token and attempt
      expect(d.write.from).toEqual({
        id: '7',
        state: facts.row!.state,
        retryCount: 6,
        attempt: 2,
        requestToken: 'tok-1',
      });
      expect(d.write.lastError).toBe(
        `REQUEUED: was ${facts.row!.state} after 6 retries (UNEXPECTED_BRANCH: RESTARTED, instance FI-9 status 10)`,
      );
    }
    if (d.code === 'REQUEUED' || d.code === 'WOULD_REQUEUE' || d.code === 'NOT_REQUEUABLE' || d.code === 'CLAIMED')
      expect(d.commandId).toBe('7');
    if (d.repeated)
      expect(d).toEqual({ code: 'NOT_REQUEUABLE', reason: 'UNKNOWN: first answer', repeated: true, commandId: '7' });
  });

  it('each refusal says why', () => {
    const reason = (r: Partial<RequeueRow> | null, f: Partial<RequeueFacts> = {}) =>
      decideRequeue({
        mode: 'named',
        reasonFilter: null,
        execute: true,
        key: KEY,
        selector: NAMED,
        prior: null,
        row: r === null ? null : row(r),
        ...f,
      }).reason;
    expect(reason({ state: 'UNKNOWN' })).toBe('UNKNOWN: already waiting for resolve-unknown, which looks it up first');
    expect(reason({ state: 'PENDING' })).toBe(
      'PENDING: not sent yet by its service; resolve-unknown takes it after --pending-grace',
    );
    expect(reason({ state: 'DONE', remote_instance_id: 'FI-3', remote_status: 30 })).toBe(
      'DONE: settled (instance FI-3 status 30); a settled command is never resent',
    );
    expect(reason({ state: 'BOGUS' })).toBe('state "BOGUS" is none of PENDING, UNKNOWN, DONE, FAILED, DEAD');
    expect(reason({ state: 'FAILED' }, { mode: 'dead', selector: DEAD_ALL })).toBe(
      'FAILED: no longer DEAD (it is retried with backoff already)',
    );
    expect(reason({}, { mode: 'dead', selector: DEAD_ALL, reasonFilter: 'OWNERSHIP_MISMATCH' })).toBe(
      'its reason is UNEXPECTED_BRANCH now, not OWNERSHIP_MISMATCH',
    );
    expect(reason({ claim_owner: 'h:1:x', claim_expires_at: '2026-10-21 10:05:00', claim_live: 1 })).toBe(
      'claimed by h:1:x until 2026-10-21 10:05:00; requeue it once that lease is over',
    );
    expect(reason(null)).toBe('no flow_apply_command for biz type "honor_apply", biz id "A-1"');
    expect(reason({ retry_count: 1, last_error: null })).toBe(
      'UNKNOWN again with its retry budget reset, same request token and attempt 2 (resolve-unknown looks it up first); was DEAD after 1 retry',
    );
    expect(reason({ retry_count: 1, last_error: null }, { execute: false })).toBe(
      'would be UNKNOWN again with its retry budget reset, same request token and attempt 2 (resolve-unknown would look it up first); is DEAD after 1 retry',
    );
    expect(
      decideRequeue({
        mode: 'named',
        reasonFilter: null,
        execute: true,
        key: KEY,
        selector: NAMED,
        prior: { selector: 'dead', selectorSha256: DEAD_ALL.sha256, code: 'REQUEUED', reason: 'r', commandId: '7' },
        row: null,
      }).reason,
    ).toMatch(
      /^operation id already used for dead \(answered REQUEUED for this command\), not for key "honor_apply" "A-1"; use a new operation id$/,
    );
  });

  it('reasons and last_error fit their columns, whatever the row held', () => {
    const d = decideRequeue({
      mode: 'named',
      reasonFilter: null,
      execute: true,
      key: KEY,
      selector: NAMED,
      prior: null,
      row: row({ last_error: `LOOKUP_TIMEOUT: ${'😀'.repeat(600)}` }),
    });
    expect([...d.reason].length).toBe(512);
    expect([...d.write!.lastError].length).toBe(512);
    expect(d.write!.lastError.endsWith('😀')).toBe(true);
  });
});

describe('selectors, reason codes, operation conflicts', () => {
  it('a file is its set of keys: order does not matter, content does', () => {
    const a = selectorOf({ kind: 'file', keys: [KEY, { bizType: 't', bizId: '2' }] });
    const b = selectorOf({ kind: 'file', keys: [{ bizType: 't', bizId: '2' }, KEY] });
    expect(a).toEqual(b);
    expect(a.text).toBe('file of 2 command(s)');
    expect(selectorOf({ kind: 'file', keys: [KEY] }).sha256).not.toBe(a.sha256);
    // one key named on the command line is not the file holding only that key
    expect(selectorOf({ kind: 'file', keys: [KEY] }).sha256).not.toBe(NAMED.sha256);
    expect(selectorOf({ kind: 'dead', reason: 'UNEXPECTED_BRANCH' }).text).toBe('dead --reason UNEXPECTED_BRANCH');
    expect(selectorOf({ kind: 'dead', reason: 'UNEXPECTED_BRANCH' }).sha256).not.toBe(DEAD_ALL.sha256);
    expect(NAMED.text).toBe('key "honor_apply" "A-1"');
    expect(selectorOf({ kind: 'key', key: { bizType: 't', bizId: 'x'.repeat(300) } }).text).toHaveLength(255);
  });
  it('reasonCodeOf reads the code before the colon', () => {
    expect([
      reasonCodeOf(null),
      reasonCodeOf(''),
      reasonCodeOf('LOOKUP_TIMEOUT: x: y'),
      reasonCodeOf('NO_COLON'),
      reasonCodeOf(': x'),
    ]).toEqual([null, null, 'LOOKUP_TIMEOUT', 'NO_COLON', null]);
  });
  it('operationConflict: any answer recorded under another selection', () => {
    expect(operationConflict([], NAMED)).toBeNull();
    expect(operationConflict([{ selector: NAMED.text, selectorSha256: NAMED.sha256 }], NAMED)).toBeNull();
    expect(operationConflict([{ selector: NAMED.text, selectorSha256: NAMED.sha256 }], DEAD_ALL)).toBe(
      'operation id already used for key "honor_apply" "A-1", not for dead; use a new operation id',
    );
  });
});

describe('operation completion and temporary answers', () => {
  const STOPS = ['done', 'signal', 'max-seconds', 'error', 'operation-conflict'] as const;
  const CODE_SETS = [
    [],
    ['REQUEUED'],
    ['REQUEUED', 'NOT_REQUEUABLE', 'NO_COMMAND'],
    ['REQUEUED', 'CLAIMED'],
    ['OPERATION_CONFLICT'],
  ] as const;
  const table: Array<[string, Parameters<typeof operationComplete>[0], boolean]> = [];
  for (const stoppedBy of STOPS)
    for (const error of [false, true])
      for (const notRun of [0, 1])
        for (const truncated of [false, true])
          for (const codes of CODE_SETS) {
            // the oracle: complete only when every selected command got a final answer
            const want =
              stoppedBy === 'done' &&
              !error &&
              notRun === 0 &&
              !truncated &&
              !codes.some((c) => c === 'CLAIMED' || c === 'OPERATION_CONFLICT');
            table.push([
              `${stoppedBy} error=${error} notRun=${notRun} truncated=${truncated} ${codes.join('+') || 'none'}`,
              { stoppedBy, error, notRun, truncated, codes: [...codes] },
              want,
            ]);
          }
  it('covers the whole table', () => expect(table).toHaveLength(5 * 2 * 2 * 2 * 5));
  it.each(table)('operationComplete %s', (_n, r, want) => expect(operationComplete(r)).toBe(want));
  it('only CLAIMED is temporary (not recorded)', () => {
    expect(
      ['REQUEUED', 'NOT_REQUEUABLE', 'CLAIMED', 'NO_COMMAND', 'OPERATION_CONFLICT'].filter((c) =>
        isTemporary(c as never),
      ),
    ).toEqual(['CLAIMED']);
  });
  it('the header row has the empty key no command has, and is left out of the answers', () => {
    expect(requeueSql.bindOperation('d', NAMED).sql).toMatch(/VALUES \(\?, '', '', \?, \?, 'OPERATION'/);
    expect(requeueSql.header('d').sql).toContain("biz_type = '' AND biz_id = ''");
    expect(requeueSql.recorded('d').sql).toContain("biz_type <> ''");
    expect(requeueSql.completeOperation('d').sql).toMatch(
      /SET completed_at = NOW\(\) WHERE op_digest = \? AND biz_type = '' AND biz_id = '' AND completed_at IS NULL$/,
    );
  });
});

describe('requeue input (flags and --from files)', () => {
  it('exactly one selection; --reason only with --dead and only a code fcctl writes', () => {
    expect(requeueTargetOf({ bizType: 't', bizId: '1' })).toEqual({ kind: 'key', key: { bizType: 't', bizId: '1' } });
    expect(requeueTargetOf({ from: 'f.csv' })).toEqual({ kind: 'file', path: 'f.csv' });
    expect(requeueTargetOf({ dead: true })).toEqual({ kind: 'dead', reason: null });
    expect(requeueTargetOf({ dead: true, reason: 'APPLY_HTTP_409' })).toEqual({
      kind: 'dead',
      reason: 'APPLY_HTTP_409',
    });
    const refused: Array<[Parameters<typeof requeueTargetOf>[0], RegExp]> = [
      [{}, /give --biz-type and --biz-id for one command, --from FILE for a list, or --dead/],
      [{ bizType: 't' }, /--biz-type and --biz-id go together/],
      [{ bizId: '1' }, /--biz-type and --biz-id go together/],
      [{ bizType: 't', bizId: '1', dead: true }, /three ways to select: give one/],
      [{ from: 'f', dead: true }, /three ways to select/],
      [{ bizType: 't', bizId: '1', from: 'f' }, /three ways to select/],
      [{ bizType: 't', bizId: '1', reason: 'LOOKUP_TIMEOUT' }, /--reason applies only with --dead/],
      [{ dead: true, reason: 'NOPE' }, /"NOPE" is not a reason code fcctl writes/],
      [{ bizType: '', bizId: '1' }, /--biz-type is missing or empty/],
      [{ bizType: 't'.repeat(33), bizId: '1' }, /--biz-type is longer than 32 characters/],
      [{ bizType: 't', bizId: 'i'.repeat(65) }, /--biz-id is longer than 64 characters/],
      [{ bizType: 't', bizId: ' 1' }, /--biz-id " 1" holds control characters or surrounding spaces/],
      [{ bizType: 't\n', bizId: '1' }, /control characters/],
    ];
    for (const [flags, says] of refused) expect(() => requeueTargetOf(flags), JSON.stringify(flags)).toThrow(says);
  });
  it('CSV with a header naming biz_type and biz_id (other columns ignored), or JSON lines with bizType and bizId', () => {
    expect(parseRequeueFile('id,biz_type,biz_id,note\n7,honor_apply,A-1,"x, y"\r\n8,honor_apply,"A,2",\n\n')).toEqual([
      { line: 2, bizType: 'honor_apply', bizId: 'A-1' },
      { line: 3, bizType: 'honor_apply', bizId: 'A,2' },
    ]);
    expect(
      parseRequeueFile(
        '\uFEFF{"type":"row","bizType":"honor_apply","bizId":"A-1","state":"DEAD"}\n\n{"bizType":"t","bizId":"甲 1"}\n',
      ),
    ).toEqual([
      { line: 1, bizType: 'honor_apply', bizId: 'A-1' },
      { line: 3, bizType: 't', bizId: '甲 1' },
    ]);
  });
  it('JSON lines: a line whose type is present and not "row" is skipped (a listing\'s summary); a row or untyped line is read', () => {
    const lines = [
      '{"type":"row","bizType":"t","bizId":"1"}',
      '{"type":"summary","command":"apply-command scan","listed":2}',
      '{"bizType":"t","bizId":"2"}',
      '{"type":"note","bizType":"t","bizId":"3"}',
      '{"type":null,"bizType":"t","bizId":"4"}',
      '{"type":"ROW","bizType":"t","bizId":"5"}',
    ];
    expect(parseRequeueFile(`${lines.join('\n')}\n`)).toEqual([
      { line: 1, bizType: 't', bizId: '1' },
      { line: 3, bizType: 't', bizId: '2' },
    ]);
    // a summary alone names no command; malformed lines are still refused with their line
    expect(() => parseRequeueFile('{"type":"summary"}\n')).toThrow(/names no command/);
    expect(() => parseRequeueFile('{"type":"summary"}\n{"type":"row",\n')).toThrow(/line 2: malformed JSON/);
    expect(() => parseRequeueFile('{"type":"summary"}\n["x"]\n')).toThrow(/line 2: not a JSON object/);
    // CSV is untouched, a column named type included
    expect(parseRequeueFile('type,biz_type,biz_id\nsummary,t,1\n')).toEqual([{ line: 2, bizType: 't', bizId: '1' }]);
    expect(parseRequeueFile('\uFEFF{"type":"summary"}\n{"bizType":"t","bizId":"1"}')).toEqual([
      { line: 2, bizType: 't', bizId: '1' },
    ]);
  });
  it('refuses a bad file naming the line', () => {
    const bad: Array<[string, RegExp]> = [
      ['', /no header line/],
      ['biz_type,biz_id\n', /names no command/],
      ['biz_type,bizid\nt,1\n', /line 1: the header lacks biz_id \(columns: biz_type, biz_id\)/],
      ['biz_type,biz_id,biz_id\nt,1,2\n', /line 1: column biz_id appears twice in the header/],
      ['biz_type,biz_id\nt\n', /line 2: malformed CSV: 1 fields, the header has 2/],
      ['biz_type,biz_id\nt,"1\n', /line 2: malformed CSV: a quoted field is not closed/],
      ['biz_type,biz_id\nt,1"x\n', /line 2: malformed CSV: a quote inside an unquoted field/],
      ['biz_type,biz_id\nt,\n', /line 2: biz_id is missing or empty/],
      [`biz_type,biz_id\nt,${'i'.repeat(65)}\n`, /line 2: biz_id is longer than 64/],
      ['biz_type,biz_id\nt,1\nt,2\nt,1\n', /line 4: "t" "1" is named on line 2 already/],
      ['{"bizType":"t","bizId":"1"}\n{"bizType":"t",}\n', /line 2: malformed JSON/],
      ['{"bizType":"t","bizId":"1"}\n[1]\n', /line 2: not a JSON object/],
      ['{"bizType":"t","bizId":1}\n', /line 1: bizId is missing or empty/],
      ['{"biz_type":"t","biz_id":"1"}\n', /line 1: bizType is missing or empty/],
      [
        `biz_type,biz_id\n${Array.from({ length: MAX_REQUEUE_ITEMS + 1 }, (_, i) => `t,${i}`).join('\n')}\n`,
        /line 100002: more than 100000 commands; split the file/,
      ],
    ];
    for (const [text, says] of bad) expect(() => parseRequeueFile(text), text.slice(0, 60)).toThrow(says);
  });
});

describe('requeue SQL (as text)', () => {
  it('the write is guarded by the generation read and by no live claim; token and attempt are not written', () => {
    const q = requeueSql.requeue({
      from: { id: '7', state: 'DEAD', retryCount: 6, attempt: 2, requestToken: 'tok-1' },
      lastError: 'REQUEUED: x',
    });
    expect(q.sql).toBe(
      "UPDATE flow_apply_command SET state = 'UNKNOWN', retry_count = 0, next_retry_at = NULL, last_error = ?, claim_owner = NULL, claim_expires_at = NULL, update_time = NOW() " +
        'WHERE id = ? AND state = ? AND retry_count = ? AND attempt = ? AND request_token = ? AND (claim_owner IS NULL OR claim_expires_at IS NULL OR claim_expires_at < NOW())',
    );
    expect(q.params).toEqual(['REQUEUED: x', '7', 'DEAD', 6, 2, 'tok-1']);
  });
  it('reads lock the command with --execute; the DEAD pages filter by reason code', () => {
    expect(requeueSql.command(KEY, true).sql).toMatch(/WHERE biz_type = \? AND biz_id = \? FOR UPDATE$/);
    expect(requeueSql.command(KEY, false).sql).not.toContain('FOR UPDATE');
    expect(requeueSql.deadKeys(null, '0', 1000)).toEqual({
      sql: "SELECT id, biz_type, biz_id FROM flow_apply_command WHERE state = 'DEAD' AND id > ? ORDER BY id LIMIT ?",
      params: ['0', 1000],
    });
    expect(requeueSql.deadKeys('UNEXPECTED_BRANCH', '9', 10).params).toEqual(['UNEXPECTED_BRANCH', '9', 10]);
    expect(requeueSql.deadKeys('UNEXPECTED_BRANCH', '9', 10).sql).toContain(
      "AND SUBSTRING_INDEX(last_error, ':', 1) = ? AND id > ?",
    );
  });
  it('the audit row: action APPLY_REQUEUE, the operation id as proof id, reason and host cut to 255', () => {
    const q = requeueSql.audit({
      outcome: 'REQUEUED',
      reason: 'r'.repeat(300),
      operationId: 'INC-1',
      runId: 'run',
      host: 'h',
      expected: { a: 1 },
      observed: null,
    });
    expect(q.params).toEqual(['APPLY_REQUEUE', 'REQUEUED', 'r'.repeat(255), 'INC-1', 'run', 'h', '{"a":1}', 'null']);
  });
});
