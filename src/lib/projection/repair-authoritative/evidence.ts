/**
 * The evidence file of `projection repair-authoritative` (JSON lines, format
 * `fcctl.repair-evidence.v1`, written by the shared {@link EvidenceFile}), appended as the run
 * goes — dry runs included, marked `"dryRun": true` — and fsynced when the run ends:
 * - `{"type":"run", runId, proofId, consumerAppKey, mode, plan, planSha256, envelope, envelopeSha256, execute, maxRereads, concurrency, items, host, startedAt}`
 * - `{"type":"decision", …}` per decision (every attempt: a LOCAL_CHANGED that was re-read is a line
 *   too): result, code, reason, expected, observed local row, authoritative triple, event id and
 *   grant version, the grant read, write, written, raced;
 * - `{"type":"end", runId, exitCode, byResult, notRun, stoppedBy, endedAt}`.
 * Never a configuration value, URL, password or secret, and no snapshot body.
 */
import { EvidenceFile } from '../../files/jsonl-evidence.js';

export const EVIDENCE_FORMAT = 'fcctl.repair-evidence.v1';

/**
 * Opens the repair evidence file for appending (exit 2 when it cannot be, before anything connects).
 * @example const evidence = await openRepairEvidence('out/repair-evidence.jsonl')
 */
export function openRepairEvidence(path: string): Promise<EvidenceFile> {
  return EvidenceFile.open(path, { format: EVIDENCE_FORMAT });
}
