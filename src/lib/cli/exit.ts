/**
 * Exit codes, the same for every command (SPEC §2). A cron run never hides per-item failures
 * behind a green exit: any failed or refused item makes the run exit 1.
 */
export const ExitCode = {
  /** everything done */
  OK: 0,
  /** some items failed or were refused; the summary says which */
  ITEMS_FAILED: 1,
  /** usage error or bad input file; nothing was changed */
  USAGE: 2,
  /** environment: cannot connect, schema missing, broker checks failed */
  ENVIRONMENT: 3,
  /** a safety check refused the whole run (bad proof, checkpoint from another job) */
  SAFETY: 4,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * An error that ends the command with a defined exit code and one line on stderr.
 * @example throw new UsageError('--size must be between 1 and 500')
 */
export class FcctlError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Bad flags, bad values, malformed input files. Exit 2. */
export class UsageError extends FcctlError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, ExitCode.USAGE, options);
  }
}

/** A service is unreachable or not as expected (schema missing, broker refused). Exit 3. */
export class EnvironmentError extends FcctlError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, ExitCode.ENVIRONMENT, options);
  }
}

/** A safety check refused the whole run. Exit 4. */
export class SafetyError extends FcctlError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, ExitCode.SAFETY, options);
  }
}

/** Exit code for a finished batch: 1 as soon as one item failed or was refused. */
export function exitCodeForCounts(failed: number): ExitCode {
  return failed > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
}

/** How a batch ended, as far as its exit code cares. */
export interface BatchEnd {
  /** the environment stopped it (broker lost or blocked, flow center down) */
  readonly environment: boolean;
  /** items failed, went DEAD or were refused */
  readonly failed: number;
  /** SIGINT/SIGTERM ended it before it was done */
  readonly interrupted: boolean;
}

/**
 * The exit code of a batch (SPEC §2): 3 when the environment stopped it; otherwise 1 when an item
 * failed or an interrupt ended it early — "not all done", the same in every command, so a cron
 * wrapper killed by a timeout never looks green; 0 when everything was done.
 * @example batchExitCode({ environment: false, failed: 0, interrupted: true }) // 1
 */
export function batchExitCode(end: BatchEnd): ExitCode {
  if (end.environment) return ExitCode.ENVIRONMENT;
  return end.failed > 0 || end.interrupted ? ExitCode.ITEMS_FAILED : ExitCode.OK;
}
