/** The options and dependencies of `retire-absent retire`'s runner. */
import type { LazyDatabases } from '../../db/lazy.js';
import type { EvidenceFile } from '../../files/jsonl-evidence.js';
import type { ProofReading } from '../decide.js';
import type { EntryOutcome } from './decide.js';

export interface RetireRunOptions {
  readonly proofFile: string;
  readonly reading: ProofReading;
  readonly execute: boolean;
  readonly maxProofAgeSeconds: number;
  readonly runId: string;
  /** `host:port/db` of the configured FC database (must be the proof's) */
  readonly fcDatabase: string;
}

export interface RetireRunDeps extends LazyDatabases {
  readonly evidence: EvidenceFile;
  readonly now: () => Date;
  readonly signal: AbortSignal;
  readonly host?: string;
  /** each entry's outcome, in proof order */
  readonly onResult?: (r: EntryOutcome) => void;
}
