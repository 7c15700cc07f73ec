/** `flow_apply_command` states (seed 000 §7.3). */
export const APPLY_COMMAND_STATES = ['PENDING', 'UNKNOWN', 'DONE', 'FAILED', 'DEAD'] as const;
export type ApplyCommandState = (typeof APPLY_COMMAND_STATES)[number];

/** A `flow_apply_command` row as resolve reads it: BIGINTs as decimal strings, times as strings. */
export interface ApplyCommandRow {
  readonly id: string;
  readonly biz_type: string;
  readonly biz_id: string;
  readonly apply_app_key: string;
  readonly submitter_id: string;
  readonly flow_guid: string;
  readonly request_token: string;
  readonly attempt: number;
  readonly state: ApplyCommandState;
  readonly retry_count: number;
  readonly create_time: string;
}

/** What identifies the claimed version of a row: a write for another version changes nothing (SPEC §2). */
/**
 * What identifies one attempt at a command. A resubmission re-arms the same row in place (new
 * request token, higher attempt: seed 000 §7.4 RESTARTED), so both are part of the generation:
 * a worker that looked up the old attempt must not settle the new one.
 */
export interface CommandGeneration {
  readonly id: string;
  readonly state: ApplyCommandState;
  readonly retryCount: number;
  readonly attempt: number;
  readonly requestToken: string;
}

export function generationOf(row: ApplyCommandRow): CommandGeneration {
  return { id: String(row.id), state: row.state, retryCount: Number(row.retry_count), attempt: Number(row.attempt), requestToken: row.request_token };
}
