/** The options and dependencies of `apply-command requeue`, and the state its steps share. */
import type { Db } from '../../db/connect.js';
import type {
  RecordedRequeue,
  RequeueDecision,
  RequeueFacts,
  RequeueResult,
  RequeueRow,
  RequeueSelection,
} from './decide.js';
import type { RequeueTarget } from './input.js';

export interface RequeueOptions {
  readonly target: RequeueTarget;
  readonly operationId: string;
  /** write; without it, report what each command would answer (evidence lines marked dryRun) */
  readonly execute: boolean;
  readonly evidencePath: string;
  readonly concurrency: number;
  readonly maxSeconds: number;
}

export interface RequeueDeps {
  readonly shDb: () => Promise<Db>;
  /** standard input, for `--from -` */
  readonly stdin: AsyncIterable<unknown>;
  readonly now: () => Date;
  readonly signal: AbortSignal;
  readonly clock: () => number;
  readonly host?: string;
  /** each result, in selection order */
  readonly onResult?: (r: RequeueResult) => void;
}

export interface HeaderRaw {
  selector: string;
  selector_sha256: string;
  completed_at: string | null;
}

export interface RecordedRaw {
  biz_type: string;
  biz_id: string;
  selector: string;
  selector_sha256: string;
  code: string;
  reason: string;
  command_id: string | number | null;
}

export interface Decided {
  readonly decision: RequeueDecision;
  readonly row: RequeueRow | null;
}

/** What every step of one operation shares: its selection, database, ids and evidence file. */
export interface Operation {
  readonly options: RequeueOptions;
  readonly deps: RequeueDeps;
  readonly db: Db;
  readonly digest: string;
  readonly selection: RequeueSelection;
  readonly selector: { readonly text: string; readonly sha256: string };
  readonly mode: RequeueFacts['mode'];
  readonly reasonFilter: string | null;
  readonly runId: string;
  readonly host: string;
  readonly evidencePath: string;
  /** appends one evidence line */
  line(record: Record<string, unknown>): Promise<void>;
}

/** What the operation id has recorded already. */
export interface Prior {
  readonly header: HeaderRaw | null;
  readonly recorded: readonly RecordedRaw[];
  /** the id is bound to another selection: nothing may be done */
  readonly conflict: string | null;
  readonly byKey: ReadonlyMap<string, RecordedRequeue>;
}
