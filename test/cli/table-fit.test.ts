import { describe, expect, it } from 'vitest';
import { summaryValueText } from '../../src/lib/cli/output.js';
import { formatDuration } from '../../src/lib/cli/progress.js';
import { formatTable } from '../../src/lib/cli/table.js';
import { tableText } from '../../src/lib/cli/ui/terminal.js';

// Issue 36 §16: a table on a terminal is fitted to it (the widest column cut with …), never wrapped.
describe('formatTable with a terminal width', () => {
  const rows = [
    { id: '47782d69-eb02-4222-90f9-d1a0b2668feb', state: 'FAILED', error: `INVALID_ROUTING_KEY: ${'x'.repeat(100)}` },
    { id: '1fc2335b-cecb-48a7-b569-24cf0d971fa4', state: 'DEAD', error: 'NACK' },
  ];
  const columns = [
    { key: 'id', header: 'event id' },
    { key: 'state' },
    { key: 'error', header: 'last error', flex: true },
  ];

  it.each([120, 80, 60])('every line fits %i columns, the free-text column cut with …', (cols) => {
    const lines = formatTable(rows, columns, cols);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(cols);
    expect(lines[1]).toMatch(/…$/);
    // the narrow columns are whole
    expect(lines[1]).toContain('47782d69-eb02-4222-90f9-d1a0b2668feb');
    expect(lines[2]).toMatch(/DEAD\s+NACK$/);
    // drawn by ink at that width: no line wrapped
    const drawn = tableText('t', lines, cols).split('\n');
    for (const l of lines) expect(drawn).toContain(l);
  });

  it('a table that fits is unchanged; without a width nothing is cut', () => {
    const small = [{ a: 'x', b: 'y' }];
    expect(formatTable(small, [{ key: 'a' }, { key: 'b' }], 80)).toEqual(
      formatTable(small, [{ key: 'a' }, { key: 'b' }]),
    );
    expect(formatTable(rows, columns).join('\n')).not.toContain('…');
  });

  it.each([
    ['emoji drawn as pictures', '❌ broker ⚡ refused ✅ '.repeat(8)],
    ['combining marks', 'e\u0301'.repeat(100)],
    ['CJK', `学校名称无效：${'北京市第一中学'.repeat(10)}`],
  ])('%s: each line drawn by ink at 80 columns is one line, the columns aligned', (_, error) => {
    const wide = [
      { id: 'a1', state: 'FAILED', error },
      { id: 'a2', state: 'DEAD', error: 'NACK' },
    ];
    const lines = formatTable(wide, columns, 80);
    const drawn = tableText('t', lines, 80).split('\n');
    expect(drawn).toHaveLength(lines.length + 1);
    for (const l of lines) expect(drawn).toContain(l);
    expect(lines[1]).toMatch(/…$/);
  });

  it('never cuts an identifier (whole): the other columns give way, and a table too wide without cutting it is left wider', () => {
    const ids = [{ key: 'id', header: 'event id', keep: true }, { key: 'state' }, { key: 'error', flex: true }];
    const lines = formatTable(rows, ids, 60);
    expect(lines[1]).toContain('47782d69-eb02-4222-90f9-d1a0b2668feb');
    expect(lines[1]).toMatch(/…$/);
    expect(formatTable(rows, ids, 20)[1]).toMatch(/^47782d69-eb02-4222-90f9-d1a0b2668feb +FAILED +INVALID…$/);
  });

  it('never cuts a column below 8 characters or its header: a table too wide for that is left wider', () => {
    const lines = formatTable(rows, columns, 10);
    expect(lines[0]).toMatch(/^event id/);
    expect(lines[1]).toMatch(/^47782d6… +FAILED +INVALID_R…$/);
  });
});

describe('identifiers are never cut', () => {
  it('a kept column stays whole; the others give way, and the table stays wider only when nothing else can', () => {
    const rows = [{ id: 'a'.repeat(36), other: 'b'.repeat(36), note: 'c'.repeat(40) }];
    const cols = [
      { key: 'id', keep: true },
      { key: 'other', keep: true },
      { key: 'note', flex: true },
    ];
    const [, line] = formatTable(rows, cols, 90);
    expect(line).toBe(`${'a'.repeat(36)}  ${'b'.repeat(36)}  ${'c'.repeat(13)}…`);
    expect(formatTable(rows, cols, 60)[1]).toBe(`${'a'.repeat(36)}  ${'b'.repeat(36)}  ${'c'.repeat(7)}…`);
  });
});

describe('durations on a terminal', () => {
  it.each([
    [59, '59s'],
    [75, '1m15s'],
    [5400, '1h30m'],
    [47 * 3600 + 120, '47h02m'],
    [3890175, '45d00h36m'],
  ])('formatDuration(%i) = %s', (s, text) => {
    expect(formatDuration(s)).toBe(text);
  });

  it.each([
    ['oldestPendingAgeSeconds', 3890175, '45d00h36m (3890175 s)'],
    ['oldestPendingAgeSeconds', 12, '12'],
    // nothing to say is said (`none`), and the run's own seconds read as a duration too: a night's
    // `reconcile run --all` of 2 hours is `2h00m (7200 s)` (issue 36 §16)
    ['oldestPendingAgeSeconds', null, 'none'],
    ['seconds', 7200, '2h00m (7200 s)'],
    ['seconds', 0.4, '0.4'],
    ['throttledSeconds', 90, '1m30s (90 s)'],
    ['due', 3890175, '3890175'],
  ])('summaryValueText(%s, %j) = %s', (key, value, text) => {
    expect(summaryValueText(key, value)).toBe(text);
  });
});
