import { describe, expect, it } from 'vitest';
import { tableText } from '../../src/lib/cli/ui/terminal.js';

// A table on a terminal is as wide as the terminal: ink's renderToString wraps at 80 columns unless
// told otherwise, which broke every row of a wide table on a 120-column terminal (the demo, issue 28).
describe('tableText', () => {
  const row = `answer ${'x'.repeat(90)} end`;

  it('keeps a 100-character row on one line of a 120-column terminal', () => {
    const text = tableText('t', ['header', row], 120);
    expect(text.split('\n')).toContain(row);
  });

  it('wraps it on an 80-column one (and without a width, as ink does)', () => {
    expect(tableText('t', ['header', row], 80).split('\n')).not.toContain(row);
    expect(tableText('t', ['header', row]).split('\n')).not.toContain(row);
  });
});
