/** `flow_apply_command` states (seed 000 §7.3). */
export const APPLY_COMMAND_STATES = ['PENDING', 'UNKNOWN', 'DONE', 'FAILED', 'DEAD'] as const;
export type ApplyCommandState = (typeof APPLY_COMMAND_STATES)[number];

/** Widths of the text columns fcctl writes (sql/sh.sql): longer text is cut to fit, never refused. */
export const COLUMN_WIDTH = { lastBranch: 32, lastError: 512 } as const;

/**
 * Text cut to at most `n` characters (code points, as a utf8mb4 VARCHAR counts them: a pair of
 * surrogates is never split).
 * @example cutText('MAYBE_CREATED', 5) // 'MAYBE'
 */
export function cutText(text: string, n: number): string {
  if (text.length <= n) return text;
  return [...text].slice(0, n).join('');
}

/**
 * `service_apply.flow_status` as read when the command was claimed: the DONE write mirrors the
 * status only over this value (SPEC §10), so a status the service wrote meanwhile is kept.
 */
export interface MirrorAtClaim {
  /** whether a service_apply row existed */
  readonly exists: boolean;
  readonly status: number | null;
  /** that row's id: the mirror is written into this row only, not one inserted since */
  readonly id?: string | null;
}

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
  /** set by the claim (not by a dry run's peek) */
  readonly mirror?: MirrorAtClaim;
}

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
  return {
    id: String(row.id),
    state: row.state,
    retryCount: Number(row.retry_count),
    attempt: Number(row.attempt),
    requestToken: row.request_token,
  };
}
