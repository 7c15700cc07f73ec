// Turns the benchmarks' JSON results into the table at the top of BENCHMARKS.md (between the
// `bench:summary` markers): each row the figure, the reference it is a ratio to (measured in the
// same run), the goal, and whether it is met. The hand-written sections below stay as they are.
import os from 'node:os';

const f = (x, d = 2) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(d) : '?');
const n = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '?');
const met = (ok) => (ok === undefined ? '—' : ok ? 'yes' : '**no**');

/** One or more table rows per benchmark, from its `--json` result (null when it failed). */
export const ROWS = {
  canon: (r) => [
    [
      'canon: fc.canon.v1 hash throughput',
      `${f(r.results.find((x) => x.id === 'fcctl')?.mbPerS, 1)} MB/s = **${f(r.ratioVsCanonicalize)}×**`,
      `\`canonicalize\` ${f(r.results.find((x) => x.id === 'canonicalize')?.mbPerS, 1)} MB/s`,
      '≥ 3×',
      met(r.ratioVsCanonicalize >= 3),
    ],
  ],
  'canon-lines': (r) => [
    [
      `canon-lines: \`canon hash --lines\` over ${n(r.inputBytes / 1e6)} MB`,
      `peak RSS **${f(r.peakRssMb, 1)} MB**, ${f(r.mbPerS, 1)} MB/s`,
      '—',
      `< ${r.rssGoalMb} MB`,
      met(r.ok),
    ],
  ],
  'apply-command': (r) => [
    [
      `apply-command: resolve-unknown, ${r.rows} rows, ${r.latencyMs} ms, concurrency ${r.concurrency}`,
      `${n(r.medianRowsPerSecond)} rows/s = **${f(r.ratio)}×**${r.referenceRowsPerSecond ? ` (${f(r.ratioToReference)}× the transport-only reference)` : ''}`,
      `bound ${n(r.boundRowsPerSecond)} rows/s${r.referenceRowsPerSecond ? `; same-run reference: FlowClient lookups alone ${n(r.referenceRowsPerSecond)}/s` : ''}`,
      '≥ 0.8×',
      met(r.ratio >= 0.8),
    ],
  ],
  'flow-transport': (r) => [
    [
      `flow-transport: signed lookups only (no database), concurrency ${r.concurrency}, ${r.latencyMs} ms`,
      `fetch ${n(r.lookupsPerSecond.fetch)}/s, node:http ${n(r.lookupsPerSecond['node:http'])}/s`,
      `bound ${n(r.boundPerSecond)}/s`,
      'none (diagnostic for apply-command)',
      '—',
    ],
  ],
  send: (r) => [
    [
      `send: ${n(r.rows)} rows, ${r.snapshotBytes} B snapshots, window ${r.window}`,
      `${n(r.fcctlPerSecond)} rows/s = **${f(r.ratio)}×** (whole process ${f(r.ratioWall)}×)`,
      `raw amqplib confirms ${n(r.rawPerSecond)} msg/s`,
      '≥ 0.7× (whole process ≥ 0.6×)',
      met(r.ratio >= 0.7 && r.ratioWall >= 0.6),
    ],
    [
      'send against the minimal relay (raw publish + claim with lease + one guarded write per batch)',
      `**${f(r.ratioToMinimal)}×** (the minimal relay: ${n(r.minimalPerSecond)} rows/s = ${f(r.minimalRatio)}× raw)`,
      `minimal relay ${n(r.minimalPerSecond)} rows/s`,
      '≥ 0.9×',
      met(r.ratioToMinimal >= 0.9),
    ],
    [
      'send CPU per row (ms): fcctl without start-up / MariaDB / RabbitMQ',
      r.cpuMsPerRow
        ? `**${f(r.cpuMsPerRow.fcctl.node, 3)}** / **${f(r.cpuMsPerRow.fcctl.mariadbd, 3)}** / ${f(r.cpuMsPerRow.fcctl['beam.smp'], 3)}`
        : '?',
      r.cpuMsPerRow
        ? `minimal relay ${f(r.cpuMsPerRow.minimal.node, 3)} / ${f(r.cpuMsPerRow.minimal.mariadbd, 3)} / ${f(r.cpuMsPerRow.minimal['beam.smp'], 3)}`
        : '?',
      '≤ 0.07 / ≤ 0.05 / —',
      met(r.cpuMsPerRow ? r.cpuMsPerRow.fcctl.node <= 0.07 && r.cpuMsPerRow.fcctl.mariadbd <= 0.05 : undefined),
    ],
    ...(r.secondHalf
      ? [
          [
            'send, second half of the rows alone (fcctl warmed up): CPU per row fcctl / MariaDB, rate',
            `${f(r.secondHalf.cpuMsPerRow.node, 3)} / ${f(r.secondHalf.cpuMsPerRow.mariadbd, 3)} ms; ${n(r.secondHalf.perSecond)} rows/s = ${f(r.secondHalf.ratio)}× raw, ${f(r.secondHalf.ratioToMinimal)}× the minimal relay`,
            "the same run's raw and minimal relay",
            'diagnostic (what a row costs once V8 has compiled the hot code)',
            '—',
          ],
        ]
      : []),
  ],
  manifest: (r) => [
    [
      `manifest scan, ${n(r.scan[1].rows)} rows`,
      `${n(r.scan[1].scanRowsPerSecond)} rows/s = **${f(r.scan[1].ratio)}×**`,
      `streaming SELECT ${n(r.scan[1].baselineRowsPerSecond)} rows/s`,
      '≥ 0.7×',
      met(r.ratioGoalMet),
    ],
    [
      `manifest scan peak RSS, ${n(r.scan[0].rows)} → ${n(r.scan[1].rows)} rows`,
      `${f(r.scan[0].scanPeakRssMb, 1)} → ${f(r.scan[1].scanPeakRssMb, 1)} MB = **${f(r.rssGrowth * 100, 1)} %**`,
      `the ${n(r.scan[0].rows)}-row run`,
      '≤ 20 %',
      met(r.rssGoalMet),
    ],
    [
      `reconcile diff, two ${n(r.diff.answers)}-answer manifests`,
      `${n(r.diff.answersPerSecond)} answers/s, peak RSS ${f(r.diff.peakRssMb, 1)} MB`,
      '—',
      'none set',
      '—',
    ],
  ],
  projection: (r) =>
    r.results
      .filter((x) => x.execute)
      .slice(0, 1)
      .map((x) => [
        `projection repair --plan, ${n(x.rows)} rows, concurrency ${x.concurrency}`,
        `${n(x.rowsPerSecond)} rows/s`,
        '—',
        'none set',
        '—',
      ]),
  report: (r) =>
    (r.cases ?? [r]).map((c) => [
      `reconcile report page, ${n(r.pairs)} pairs × ${n(r.nights)} nights (synthetic), ${c.worst ? 'worst case: every pair differing in 5 categories' : `${c.differing ?? 0.1} of pairs differing`}`,
      `**${f(c.mb, 2)} MB**, written in ${n(c.writeMs)} ms; Chromium interactive **${n(c.interactiveMs)} ms**; search ${n(c.filterMs)}, sort ${n(c.sortMs)}, category ${n(c.categoryMs)}${c.detailMs === undefined ? '' : `, drill-down ${n(c.detailMs)}`} ms`,
      '—',
      '≤ 5 MB, < 5 s, < 2 s, < 200 ms',
      met(c.met ?? r.met),
    ]),
  'reconcile-all': (r) => [
    [
      `reconcile run --all, ${n(r.pairs)} pairs × ~${n(Math.round(r.answers / r.pairs))} answers`,
      `${f(r.allSeconds, 1)} s = **${f(r.speedup, 2)}×** (--concurrency 1: ${f(r.allConcurrency1Seconds, 1)} s = ${f(r.speedupConcurrency1, 2)}×)`,
      `one \`reconcile run\` process per pair, in turn: ${f(r.wrapperSeconds, 1)} s`,
      '≥ 3×',
      met(r.speedup >= 3),
    ],
    [
      `reconcile run --all peak RSS, ${n(r.rss.smallPairs)} → ${n(r.rss.pairs)} pairs`,
      `${f(r.rss.smallMb, 1)} → ${f(r.rss.mb, 1)} MB = **${f(r.rss.growth * 100, 1)} %**`,
      `the ${n(r.rss.smallPairs)}-pair run`,
      '≤ 20 %',
      met(r.rss.growth <= 0.2),
    ],
  ],
  startup: (r) => [
    [
      `startup: median of ${r.runs} runs off a terminal`,
      `\`--version\` **${n(r.medianMs.version)} ms**, \`deliveries send --dry-run\` (empty outbox) **${n(r.medianMs.dryRun)} ms**; ink/React loaded: ${r.inkLoaded.version || r.inkLoaded.dryRun ? '**yes**' : 'no'}`,
      `\`node -e 0\` ${n(r.medianMs.node)} ms; \`--version\` with ink and React loaded ${n(r.medianMs.versionInk)} ms`,
      'neither ink nor React loaded',
      met(r.goalMet),
    ],
  ],
  scan: (r) => [
    [
      `scan: \`deliveries scan\` next to ${n(r.pending)} PENDING rows, median of ${r.rounds} runs`,
      `**${n(r.medianMs.history)} ms** after ${n(r.history)} BROKER_ACCEPTED + ${n(r.dead)} DEAD rows; statements ${Object.entries(
        r.statementsMs,
      )
        .map(([k, v]) => `${k} ${n(v)}`)
        .join(', ')} ms`,
      `no history ${n(r.medianMs.plain)} ms; \`--version\` ${n(r.medianMs.version)} ms`,
      '< 1,000 ms at 2,000,000',
      met(r.goalMet),
    ],
  ],
  latency: (r) => [
    [
      `latency: \`deliveries send --follow\`, ${n(r.latency.rows)} rows committed one at a time at ${n(r.rate)}/s`,
      `p50 **${n(r.latency.p50Ms)} ms**, p99 **${n(r.latency.p99Ms)} ms** (max ${n(r.latency.maxMs)}, missing ${n(r.latency.missing)})`,
      r.cron
        ? `cron every ${n(r.cron.everySeconds)} s: p50 ${n(r.cron.p50Ms)} ms, p99 ${n(r.cron.p99Ms)} ms`
        : 'cron not measured',
      'p50 ≤ 150 ms, p99 ≤ 500 ms',
      met(r.latency.missing === 0 && r.latency.p50Ms <= 150 && r.latency.p99Ms <= 500),
    ],
    ...(r.idle
      ? [
          [
            `idle: follow relay on an empty outbox, ${n(r.idle.seconds)} s`,
            `**${f(r.idle.totalPctOfCore, 2)} %** of one core (relay ${f(r.idle.relayPctOfCore, 2)} %, MariaDB ${f(r.idle.mariadbPctOfCore, 2)} %)`,
            '—',
            '≤ 2 %',
            met(r.idle.totalPctOfCore <= 2),
          ],
        ]
      : []),
    ...(r.saturation
      ? [
          [
            `saturation: ${n(r.saturation.rows)} rows due at once`,
            `follow **${n(r.saturation.followRowsPerSecond)} rows/s** = ${f(r.saturation.ratio, 2)}× batch, ${f(r.saturation.ratioToMinimal, 2)}× minimal`,
            `a batch \`deliveries send\` ${n(r.saturation.batchRowsPerSecond)} rows/s; the minimal relay ${n(r.saturation.minimalRowsPerSecond)} rows/s`,
            '≥ 1× batch, ≥ 0.9× minimal',
            met(r.saturation.ratio >= 1 && r.saturation.ratioToMinimal >= 0.9),
          ],
        ]
      : []),
    ...(r.memory
      ? [
          [
            `memory: one follow relay over ${n(r.memory.rows)} rows`,
            `RSS ${f(r.memory.at100k.rssMb, 1)} → ${f(r.memory.atEnd.rssMb, 1)} MB = **${f(r.memory.rssGrowth, 3)}×**; handles ${n(r.memory.atStart.handles)} → ${n(r.memory.atEnd.handles)}`,
            'after 100,000 rows',
            '≤ 1.10×, no more handles',
            met(r.memory.rssGrowth <= 1.1 && r.memory.atEnd.handles <= r.memory.atStart.handles),
          ],
        ]
      : []),
  ],
  throttle: (r) => [
    [
      `throttle: \`manifest scan --max-load\` never reached, ${n(r.rows)} rows`,
      `**${f(r.ratio, 3)}×** of the plain scan's time (wall ${f(r.wallRatio, 3)}×); the checks alone ${f(r.checkCost * 100, 2)} %`,
      'the same scan without --max-load',
      '≤ 1.05×',
      met(r.goalMet),
    ],
  ],
};

/** The markdown block: machine line and one table. */
export function summaryBlock(results, machine, minutes) {
  const lines = [
    '<!-- bench:summary:start (written by `npm run bench`; edit the sections below instead) -->',
    `## Goals at a glance`,
    '',
    `Machine: ${machine.cpus} CPUs (${machine.cpu}), ${machine.memoryGb} GB, Node ${machine.node}, ${machine.mariadb}, RabbitMQ ${machine.rabbitmq}. ` +
      `Run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, all benchmarks in ${minutes.toFixed(1)} minutes, load average at the end ${os.loadavg()[0].toFixed(1)}.`,
    '',
    '| benchmark | measured | reference (same run) | goal | met? |',
    '|---|---|---|---|---|',
  ];
  for (const [name, toRows] of Object.entries(ROWS)) {
    const r = results[name];
    if (r === undefined) continue;
    if (r === null) {
      lines.push(`| ${name} | failed (see its output) | — | — | **no** |`);
      continue;
    }
    try {
      for (const row of toRows(r)) lines.push(`| ${row.join(' | ')} |`);
    } catch (err) {
      lines.push(`| ${name} | unreadable result (${err.message}) | — | — | **no** |`);
    }
  }
  lines.push('', '<!-- bench:summary:end -->');
  return lines.join('\n');
}

/** BENCHMARKS.md with the block replaced (or inserted after the title). */
export function rewrite(text, block) {
  const start = text.indexOf('<!-- bench:summary:start');
  const end = text.indexOf('<!-- bench:summary:end -->');
  if (start >= 0 && end > start)
    return text.slice(0, start) + block + text.slice(end + '<!-- bench:summary:end -->'.length);
  const firstSection = text.indexOf('\n## ');
  return firstSection < 0
    ? `${text}\n${block}\n`
    : `${text.slice(0, firstSection + 1)}${block}\n\n${text.slice(firstSection + 1)}`;
}
