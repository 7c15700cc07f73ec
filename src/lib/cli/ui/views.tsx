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
