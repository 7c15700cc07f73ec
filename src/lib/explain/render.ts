/**
 * How `fcctl explain` shows its document: `--json` (or off a terminal) the document as one JSON
 * line; on a terminal an ink report (lib/cli/ui ReportView) of the same sections, verdicts first.
 */
import type { Io } from '../cli/io.js';
import { jsonLine } from '../cli/printable.js';
import { formatTable, type Row } from '../cli/table.js';
import { terminal } from '../cli/terminal.js';
import type { ReportBlock } from '../cli/ui/views.js';
import type { ApplySection, ExplainDocument, ShSection } from './run.js';
import { SECTION_LIMIT } from './sql.js';
import type { Section, Verdict } from './types.js';

/** The document `--json` prints, or a command's (`explain command`) subset. */
export type ExplainOutput = Pick<ExplainDocument, 'subject' | 'found' | 'exitCode'> &
  Partial<ExplainDocument> & { readonly command?: string };

const yesNo = (b: boolean | null) => (b === null ? '-' : b ? 'yes' : 'no');

/** The line under a list cut at its limit: a person must know there is more than shown. */
const cutLine = (cut: boolean, what: string) =>
  cut ? [`… only the first ${SECTION_LIMIT} ${what} shown: narrow with --consumer and --school`] : [];

/** A section that was not read, as one line, or null when it was. */
function unreadLine(s: Section<object>): string | null {
  if (s.status === 'not configured') return 'not configured';
  if (s.status === 'unreachable') return `unreachable: ${s.error}`;
  return null;
}

function block(title: string, s: Section<object> | undefined, lines: () => string[]): ReportBlock | null {
  if (s === undefined) return null;
  const unread = unreadLine(s);
  if (unread !== null) return { title, lines: [unread], tone: s.status === 'unreachable' ? 'bad' : 'warn' };
  const body = lines();
  return { title, lines: body.length > 0 ? body : ['none'] };
}

const table = (rows: readonly Row[], keys: readonly string[]) =>
  rows.length === 0
    ? []
    : formatTable(
        rows,
        keys.map((key) => ({ key })),
      );

function verdictBlock(verdicts: readonly Verdict[]): ReportBlock {
  const good = verdicts.every((v) => v.kind === 'DELIVERED_APPLIED');
  return {
    title: 'verdict',
    tone: good ? 'good' : 'warn',
    lines: verdicts.flatMap((v) => [
      `${v.consumerAppKey} / school ${v.schId}: ${v.text}`,
      // a command that writes only with --execute: its dry run first, then the write (docs: a dry run first)
      ...(v.command && v.execute ? ['  dry run, then the write:'] : []),
      ...(v.command ? [`  $ ${v.command}`] : []),
      ...(v.execute ? [`  $ ${v.execute}`] : []),
    ]),
  };
}

function shLines(sh: ShSection): string[] {
  return [
    ...table(sh.projections as unknown as Row[], [
      'schId',
      'revision',
      'contentHash',
      'isDeleted',
      'linkState',
      'retiredAt',
      'retireProofId',
      'lastRepairProofId',
      'projectionVersion',
    ]),
    ...(sh.audit.length > 0
      ? [
          'audit:',
          ...table(sh.audit as unknown as Row[], ['createTime', 'action', 'outcome', 'proofId', 'runId']),
          ...cutLine(sh.auditTruncated, 'audit rows (newest)'),
        ]
      : []),
    ...sh.reconcile.map(
      (r) =>
        `reconcile run ${r.runId} (school ${r.schId}, ${r.state} ${r.finishedAt ?? ''}): ${r.category} — ${r.categorySource}`,
    ),
  ];
}

function applyLines(a: ApplySection): string[] {
  return a.commands.flatMap((c) => [
    `${c.bizType}/${c.bizId}: ${c.state}, branch ${c.lastBranch ?? '-'}, remote ${c.remoteStatus ?? '-'}, retries ${c.retryCount}, flow_status ${c.flowStatus ?? '-'}`,
    `  flow center: ${c.flow.status}${c.flow.status === 'found' ? ` ${JSON.stringify(c.flow.instance)}` : c.flow.status === 'error' ? ` ${c.flow.error}` : ''}`,
  ]);
}

/** The report's blocks, in the chain's order after the verdicts. */
export function explainBlocks(doc: ExplainOutput): ReportBlock[] {
  const subject = Object.entries(doc.subject)
    .map(([k, v]) => `${k} ${v}`)
    .join(' · ');
  const blocks: Array<ReportBlock | null> = [
    {
      title: `explain ${subject}`,
      lines: doc.found ? [] : ['not found anywhere that was read'],
      tone: doc.found ? 'plain' : 'bad',
    },
    doc.verdicts ? verdictBlock(doc.verdicts) : null,
    block('FC', doc.fc, () => {
      const a = doc.fc?.status === 'ok' ? doc.fc.answer : null;
      if (a === null) return ['no answer row'];
      return [
        `form ${a.formUuid} v${a.formVersion} · school ${a.schId} · revision ${a.revision} · deleted ${yesNo(a.isDeleted)} · updated ${a.updateTime ?? '-'}`,
        `hash now ${a.contentHash ?? a.hashError} · newest outbox row (revision ${a.outboxRevision ?? '-'}) ${a.outboxHash ?? '-'} · match ${yesNo(a.hashMatches)}`,
      ];
    }),
    block('grants', doc.grants, () => [
      ...table((doc.grants?.status === 'ok' ? doc.grants.rows : []) as unknown as Row[], [
        'consumerAppKey',
        'schId',
        'grantVersion',
        'read',
        'subscribe',
        'push',
        'revoked',
      ]),
      ...cutLine(doc.grants?.status === 'ok' && doc.grants.truncated, 'grants'),
    ]),
    block('outbox', doc.outbox, () => [
      ...table(
        (doc.outbox?.status === 'ok' ? doc.outbox.rows : []).map((r) => ({
          ...r,
          claim:
            r.claimOwner === null
              ? ''
              : `${r.claimOwner} ${r.claimLive ? 'live' : 'expired'}${r.claimHolder ? ` on ${r.claimHolder.host}` : ''}`,
        })),
        [
          'eventId',
          'consumerAppKey',
          'schId',
          'revision',
          'state',
          'retryCount',
          'lastError',
          'nextRetry',
          'brokerAcceptedAt',
          'consumerAppliedAt',
          'consumerOutcome',
          'claim',
        ],
      ),
      ...cutLine(doc.outbox?.status === 'ok' && doc.outbox.truncated, 'outbox rows (newest revisions)'),
    ]),
    block('SH', doc.sh, () => (doc.sh?.status === 'ok' ? shLines(doc.sh) : [])),
    block('apply commands', doc.applyCommands, () =>
      doc.applyCommands?.status === 'ok' ? applyLines(doc.applyCommands) : [],
    ),
  ];
  return blocks.filter((b): b is ReportBlock => b !== null);
}

/**
 * Prints the document: one JSON line when `json`, else the ink report (ink already loaded by main).
 * @example renderExplain(doc, ctx.io, ctx.output.json)
 */
export function renderExplain(doc: ExplainOutput, io: Io, json: boolean): void {
  if (json) {
    io.stdout.write(`${jsonLine(doc)}\n`);
    return;
  }
  io.stdout.write(`${terminal().reportText(explainBlocks(doc), io.stdout.columns)}\n`);
}
