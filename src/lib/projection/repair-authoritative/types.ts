/** The options, dependencies and per-item outcome of `projection repair-authoritative`. */
import type { Db } from '../../db/connect.js';
import type { EvidenceFile } from '../../files/jsonl-evidence.js';
import type { AuthoritativeSnapshot, DecisionResult, ReasonCode, Triple } from './decide.js';

/** What every item of a run shares. */
export interface RepairRunOptions {
  /** the consumer whose grant authorizes the projection (this SH deployment's credential key) */
  readonly consumerAppKey: string;
  readonly proofId: string;
  readonly runId: string;
  readonly host: string;
  readonly execute: boolean;
  /** LOCAL_CHANGED re-reads per item (0: answer the first LOCAL_CHANGED) */
  readonly maxRereads: number;
  /** the authoritative snapshot of an `--envelope` file (single mode); otherwise built from FC */
  readonly envelope?: AuthoritativeSnapshot;
}

export interface RepairDeps {
  readonly fcDb: Db;
  readonly shDb: Db;
  /** where every decision is appended; null: none (library use) */
  readonly evidence: EvidenceFile | null;
  readonly now: () => Date;
}

/** The answer for one item, as printed. */
export interface RepairOutcome {
  readonly line: number;
  readonly answerUuid: string;
  readonly schId: string;
  readonly category: string | null;
  readonly result: DecisionResult;
  readonly code: ReasonCode;
  readonly reason: string;
  /** what was (or, in a dry run, would be) written: `insert`, `update`, or null */
  readonly write: 'insert' | 'update' | null;
  readonly written: boolean;
  readonly rereads: number;
  /** the first expectation and the last one decided on (they differ after re-reads) */
  readonly expected: Triple;
  readonly lastExpected: Triple;
  readonly authoritative: {
    readonly revision: string;
    readonly contentHash: string;
    readonly isDeleted: boolean;
    readonly grantVersion: string;
    readonly eventId: string;
  } | null;
}
