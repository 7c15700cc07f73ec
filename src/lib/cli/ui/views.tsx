import { Box, Text } from 'ink';
import type { ProgressSnapshot } from '../progress.js';
import { formatDuration } from '../progress.js';

/** Live progress of a batch command: done/total, rate, ETA and failures by reason. */
export function ProgressView({ snapshot }: { snapshot: ProgressSnapshot }) {
  const total = snapshot.total === undefined ? '' : `/${snapshot.total}`;
  const failures = Object.entries(snapshot.failures);
  return (
    <Box flexDirection="column">
      <Text>
        <Text bold>{snapshot.label}</Text> {snapshot.done}
        {total} · {snapshot.ratePerSecond.toFixed(1)}/s
        {snapshot.etaSeconds === undefined ? '' : ` · ETA ${formatDuration(snapshot.etaSeconds)}`}
      </Text>
      {snapshot.status !== undefined && (
        <Text>
          {Object.entries(snapshot.status)
            .map(([k, v]) => `${k} ${v}`)
            .join(' · ')}
        </Text>
      )}
      {failures.length > 0 && (
        <Text color="red">failures: {failures.map(([reason, n]) => `${reason} ${n}`).join(', ')}</Text>
      )}
    </Box>
  );
}

/** A finished listing or summary: a bold title and an aligned table. */
export function TableView({ title, lines }: { title?: string; lines: readonly string[] }) {
  const [header, ...rest] = lines;
  return (
    <Box flexDirection="column">
      {title !== undefined && <Text bold>{title}</Text>}
      {header !== undefined && <Text underline>{header}</Text>}
      {rest.map((line, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a fixed list of lines, drawn once, never reordered
        <Text key={i}>{line}</Text>
      ))}
    </Box>
  );
}

/** One block of a report view: a bold title, then lines; a `warn` block's lines are yellow, `bad` red. */
export interface ReportBlock {
  readonly title: string;
  readonly lines: readonly string[];
  readonly tone?: 'plain' | 'warn' | 'bad' | 'good';
}

const TONE_COLOR = { plain: undefined, warn: 'yellow', bad: 'red', good: 'green' } as const;

/** A report of titled blocks, drawn once (`fcctl explain`). */
export function ReportView({ blocks }: { blocks: readonly ReportBlock[] }) {
  return (
    <Box flexDirection="column">
      {blocks.map((b, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a fixed list of blocks, drawn once, never reordered
        <Box key={i} flexDirection="column" marginBottom={1}>
          <Text bold>{b.title}</Text>
          {b.lines.map((line, j) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: a fixed list of lines, drawn once
            <Text key={j} color={TONE_COLOR[b.tone ?? 'plain']}>
              {line}
            </Text>
          ))}
        </Box>
      ))}
    </Box>
  );
}
