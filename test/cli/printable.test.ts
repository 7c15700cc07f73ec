/**
 * Text from the databases on a terminal (lib/cli/printable.ts): every C0, DEL and C1 control shown
 * as `\uXXXX`; JSON lines that parse back to the same value with DEL, C1 and U+2028/9 escaped too.
 */
import { describe, expect, it } from 'vitest';
import { jsonLine, printable } from '../../src/lib/cli/printable.js';
import { Output } from '../../src/lib/cli/output.js';
import { formatTable } from '../../src/lib/cli/table.js';
import { testIo } from '../helpers/io.js';

// every control: C0, DEL, C1
const CONTROLS = [
  ...Array.from({ length: 0x20 }, (_, i) => i),
  0x7f,
  ...Array.from({ length: 0x20 }, (_, i) => 0x80 + i),
].map((c) => String.fromCharCode(c));

describe('printable', () => {
  it.each([
    ['NACK: nacked', 'NACK: nacked'],
    ['\u001b]0;TITLE\u0007', '\\u001b]0;TITLE\\u0007'],
    ['\u001b[31mred\u001b[0m', '\\u001b[31mred\\u001b[0m'],
    ['\u009b2J', '\\u009b2J'],
    ['a\nb\r', 'a\\u000ab\\u000d'],
    ['张三 é', '张三 é'],
  ])('%j → %j', (text, shown) => expect(printable(text)).toBe(shown));
  it('leaves no control character', () => {
    const all = CONTROLS.join('');
    expect(printable(all)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(printable(printable(all))).toBe(printable(all));
  });
  it('a table of such cells: escaped before measured, so its columns stay aligned', () => {
    const lines = formatTable(
      [
        { a: '\u001b[5mx', b: 1 },
        { a: 'plain', b: 2 },
      ],
      [{ key: 'a' }, { key: 'b' }],
    );
    for (const line of lines) expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    // the second column starts at one place on every line
    expect(new Set(lines.map((l) => l.search(/\S+$/))).size).toBe(1);
  });
});

describe('jsonLine', () => {
  it('parses back to the same value and holds no raw control', () => {
    const value = { e: `${CONTROLS.join('')}\u2028\u2029`, n: 1 };
    const line = jsonLine(value);
    expect(JSON.parse(line)).toEqual(value);
    expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/);
    expect(jsonLine({ a: 'é张' })).toBe('{"a":"é张"}');
  });
});

describe('Output.note on a terminal', () => {
  it('shows a value with escape sequences printable, line by line', () => {
    const t = testIo({ tty: true });
    new Output(t.io).note('excluded a1: \u001b]0;TITLE\u0007x\nsecond \u009b2J');
    expect(t.stdout()).toBe('excluded a1: \\u001b]0;TITLE\\u0007x\nsecond \\u009b2J\n');
  });
});
