/** The options, dependencies and result of `retire-absent prove`. */
import type { Db } from '../../db/connect.js';
import type { ProofExclusion, RetireProof } from '../decide.js';

export interface ProveOptions {
  readonly candidatesFile: string;
  readonly fcManifest: string;
  /** one per shard, in shard order; the shards must cover the whole key space */
  readonly fcCheckpoints: readonly string[];
  readonly out: string;
  readonly proofId: string;
  /** default: the run id of `run.json` beside the candidates */
  readonly taskId?: string;
  /** `host:port/db` of the configured FC database: must be the one the manifest was scanned from */
  readonly fcDatabase: string;
}

export interface ProveDeps {
  readonly fcDb: () => Promise<Db>;
  /**
   * The SH database, to check a chosen proof id (`--proof-id`) is not one another proof already
   * used (`fc_reconcile_audit`); absent → no check (the id is a new UUID, used by no one).
   */
  readonly shDb?: () => Promise<Db>;
  readonly now: () => Date;
  readonly signal?: AbortSignal;
  /** each candidate left out, as it is found */
  readonly onExcluded?: (x: ProofExclusion) => void;
}

export type ProveResult =
  | { readonly kind: 'written'; readonly proof: RetireProof; readonly out: string; readonly candidates: number }
  | { readonly kind: 'no-candidates'; readonly out: string }
  | { readonly kind: 'stopped'; readonly reason: string; readonly checked: number; readonly candidates: number };
