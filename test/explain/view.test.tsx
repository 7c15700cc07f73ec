/**
 * `fcctl explain`'s terminal report with ink-testing-library: the blocks explainBlocks makes from a
 * document, drawn by ReportView — verdicts first with their commands, an unread side said so.
 */
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { ReportView } from '../../src/lib/cli/ui/views.js';
import { explainBlocks, type ExplainOutput } from '../../src/lib/explain/render.js';

const A = '0a0b0c0d-0000-4000-8000-00000000000a';
const doc: ExplainOutput = {
  subject: { answerUuid: A },
  found: true,
  exitCode: 3,
  fc: { status: 'unreachable', error: 'FC database: connect ECONNREFUSED' },
  sh: { status: 'not configured' },
  verdicts: [
    {
      consumerAppKey: 'k1',
      schId: '5',
      kind: 'DEAD',
      text: 'DEAD (NO_ROUTE ×8)',
      command: `fcctl deliveries replay --consumer k1 --school 5 --answer ${A} --expected-revision 4 --operation-id explain:e:g0`,
      execute: `fcctl deliveries replay --consumer k1 --school 5 --answer ${A} --expected-revision 4 --operation-id explain:e:g0 --execute`,
    },
  ],
  outbox: {
    status: 'ok',
    rows: [],
    truncated: false,
  },
};

describe('explain report view', () => {
  it('draws the verdict, its command, and each section or why it was not read', () => {
    const { lastFrame } = render(<ReportView blocks={explainBlocks(doc)} />);
    const frame = lastFrame() ?? '';
    const lines = frame.split('\n');
    expect(lines[0]).toBe(`explain answerUuid ${A}`);
    expect(frame).toContain('k1 / school 5: DEAD (NO_ROUTE ×8)');
    // the dry run, then the write (issue 36 §13); ink-testing-library wraps at 100 columns
    const flat = frame.replace(/\n(?! {2})/g, ' ');
    expect(flat).toContain(
      `  dry run, then the write:\n  $ fcctl deliveries replay --consumer k1 --school 5 --answer ${A} --expected-revision 4 --operation-id explain:e:g0\n  $ fcctl deliveries replay --consumer k1 --school 5 --answer ${A} --expected-revision 4 --operation-id explain:e:g0 --execute`,
    );
    expect(frame).toMatch(/FC\nunreachable: FC database: connect ECONNREFUSED/);
    expect(frame).toMatch(/SH\nnot configured/);
    expect(frame).toMatch(/outbox\nnone/);
    expect(frame.indexOf('verdict')).toBeLessThan(frame.indexOf('\nFC\n'));
  });

  it('an answer found nowhere says so under its title', () => {
    const { lastFrame } = render(
      <ReportView blocks={explainBlocks({ subject: { eventId: 'e1' }, found: false, exitCode: 1 })} />,
    );
    expect(lastFrame()?.trimEnd()).toBe('explain eventId e1\nnot found anywhere that was read');
  });
});
