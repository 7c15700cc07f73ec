/**
 * Manifest scan checkpoints: what a killed scan needs to resume byte for byte, and what a reader
 * of the finished manifest needs to trust it (complete, row count, SHA-256, completion time).
 *
 * The file is one JSON object (format `fcctl.manifest.checkpoint.v1`), replaced atomically after
 * every page (temp file, fsync, rename, directory fsync), always after the page's bytes were
 * fsynced to the output:
 *
 * ```json
 * {"format":"fcctl.manifest.checkpoint.v1",
 *  "params":{"side":"fc","database":"127.0.0.1:3306/fc","schId":"5","formUuid":"…","shard":null,"out":"/abs/fc.jsonl"},
 *  "paramsDigest":"<fc.canon.v1 hash of params>",
 *  "size":200,"cursor":"<last answerUuid written>"|null,"pages":3,"rows":512,"outputBytes":98304,
 *  "sha256":"<SHA-256 of the output's first outputBytes bytes>",
 *  "completed":true,"startedAt":"2026-11-30T01:00:00.000Z","updatedAt":"…","completedAt":"…"|null,
 *  "dbStartedAt":"2026-11-30 09:00:01","dbStartedAtUtc":"2026-11-30 01:00:01"}
 * ```
 *
 * `dbStartedAt` is the scanned database's NOW() when the scan began (kept on resume), and
 * `dbStartedAtUtc` its UTC_TIMESTAMP() at the same instant: `reconcile diff` refuses a task start
 * that is not before the FC scan's (src/lib/reconcile/decide.ts) — in UTC when the task start has
 * one (`reconcile run`), since SH and FC may be in different zones. Checkpoints written before
 * they were recorded lack them; they still resume, but a diff that needs them refuses them.
 */
import { paramsDigest } from '../canon/params-digest.js';
import { normalizeDateTime } from '../time/datetime.js';
import { readFile } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { SafetyError, UsageError } from '../cli/exit.js';
import { writeFileAtomic } from '../files/atomic.js';
import type { ManifestSide } from './row.js';

export const CHECKPOINT_FORMAT = 'fcctl.manifest.checkpoint.v1';

/** The parameters that decide a scan's output; a checkpoint is only resumed with equal ones. */
export interface ScanParams {
  readonly side: ManifestSide;
  /** `host:port/database` of the side's database (no user, no password) */
  readonly database: string;
  readonly schId: string;
  readonly formUuid: string;
  /** `i/n` or null */
  readonly shard: string | null;
  /** the output file, as an absolute path */
  readonly out: string;
}

export interface Checkpoint {
  readonly format: typeof CHECKPOINT_FORMAT;
  readonly params: ScanParams;
  readonly paramsDigest: string;
  /** the page size last used (not a parameter: another size gives the same bytes) */
  readonly size: number;
  /** the answer uuid of the last row written; null before the first row */
  readonly cursor: string | null;
  readonly pages: number;
  readonly rows: number;
  readonly outputBytes: number;
  /** lowercase hex SHA-256 of the output's first `outputBytes` bytes (the whole file once completed) */
  readonly sha256: string;
  readonly completed: boolean;
  /** ISO 8601 UTC times of this machine's clock */
  readonly startedAt: string;
  readonly updatedAt: string;
  readonly completedAt: string | null;
  /**
   * `yyyy-MM-dd HH:mm:ss`: the scanned database's NOW() when the scan began, in that database's
   * clock; absent in checkpoints of an fcctl that did not record it
   */
  readonly dbStartedAt?: string;
  /** `yyyy-MM-dd HH:mm:ss`: the scanned database's UTC_TIMESTAMP() at the same instant; absent in older checkpoints */
  readonly dbStartedAtUtc?: string;
}

/**
 * The checkpoint path used when none is given: `x.jsonl` → `x.checkpoint.json` (other names get
 * `.checkpoint.json` appended). `manifest scan` and `reconcile diff` use the same rule.
 * @example defaultCheckpointPath('/data/fc.jsonl') // '/data/fc.checkpoint.json'
 */
export function defaultCheckpointPath(out: string): string {
  const abs = resolve(out);
  const ext = extname(abs);
  const stem = ext === '.jsonl' ? basename(abs, ext) : basename(abs);
  return join(dirname(abs), `${stem}.checkpoint.json`);
}

/** The lock file that guards a checkpoint while a scan writes it. */
export function lockPathFor(checkpointPath: string): string {
  return `${resolve(checkpointPath)}.lock`;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** Parses a checkpoint's text; throws a plain Error naming the problem. */
export function parseCheckpoint(text: string): Checkpoint {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new Error('not valid JSON');
  }
  const c = v as Partial<Checkpoint> | null;
  if (typeof c !== 'object' || c === null || c.format !== CHECKPOINT_FORMAT)
    throw new Error(`not a ${CHECKPOINT_FORMAT} file`);
  const p = c.params as Partial<ScanParams> | undefined;
  const ok =
    typeof p === 'object' &&
    p !== null &&
    (p.side === 'fc' || p.side === 'sh') &&
    typeof p.database === 'string' &&
    typeof p.schId === 'string' &&
    typeof p.formUuid === 'string' &&
    (p.shard === null || typeof p.shard === 'string') &&
    typeof p.out === 'string' &&
    typeof c.paramsDigest === 'string' &&
    HEX64.test(c.paramsDigest) &&
    Number.isSafeInteger(c.size) &&
    (c.cursor === null || typeof c.cursor === 'string') &&
    Number.isSafeInteger(c.pages) &&
    c.pages! >= 0 &&
    Number.isSafeInteger(c.rows) &&
    c.rows! >= 0 &&
    Number.isSafeInteger(c.outputBytes) &&
    c.outputBytes! >= 0 &&
    typeof c.sha256 === 'string' &&
    HEX64.test(c.sha256) &&
    typeof c.completed === 'boolean' &&
    typeof c.startedAt === 'string' &&
    typeof c.updatedAt === 'string' &&
    (c.completedAt === null || typeof c.completedAt === 'string') &&
    (c.dbStartedAt === undefined ||
      (typeof c.dbStartedAt === 'string' && normalizeDateTime(c.dbStartedAt) === c.dbStartedAt)) &&
    (c.dbStartedAtUtc === undefined ||
      (typeof c.dbStartedAtUtc === 'string' && normalizeDateTime(c.dbStartedAtUtc) === c.dbStartedAtUtc));
  if (!ok) throw new Error('a member is missing or of the wrong type');
  if (paramsDigest(p as ScanParams) !== c.paramsDigest) throw new Error('its paramsDigest does not match its params');
  return c as Checkpoint;
}

/**
 * Reads a checkpoint: null when the file does not exist; a {@link SafetyError} (exit 4) when it
 * exists and is not a valid checkpoint (it is written atomically, so a bad one was not ours).
 */
export async function readCheckpoint(path: string): Promise<Checkpoint | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new UsageError(
      `cannot read checkpoint ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      { cause: err },
    );
  }
  try {
    return parseCheckpoint(text);
  } catch (err) {
    throw new SafetyError(
      `checkpoint ${path} is not a valid manifest checkpoint (${(err as Error).message}); refusing to use it`,
    );
  }
}

/** Writes a checkpoint atomically (see {@link writeFileAtomic}). */
export async function writeCheckpoint(path: string, checkpoint: Checkpoint): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(checkpoint, null, 1)}\n`, 0o600);
}
