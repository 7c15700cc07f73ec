/**
 * Reading a finished manifest in constant memory, and proving it is the complete output of its
 * scan(s): every line checked (UTF-8, JSON, members, strictly ascending `answerUuid`), and the
 * bytes checked against the checkpoint(s) — size, SHA-256 and row count per checkpoint. Shards
 * concatenated in shard order are read as one manifest with one checkpoint per shard.
 *
 * Used by `reconcile diff` (and meant for `retire-absent prove`, which must name the complete FC
 * manifest it came from: {@link verifyManifestFile}).
 */
import { isUtf8 } from 'node:buffer';
import { createHash, type Hash } from 'node:crypto';
import { type FileHandle, open, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { SafetyError, UsageError } from '../cli/exit.js';
import { LineSplitter, type LineEvent } from '../cli/lines.js';
import { type Checkpoint, readCheckpoint } from './checkpoint.js';
import { compareKeys, ManifestLineError, type ManifestRow, type ManifestSide, parseManifestLine } from './row.js';
import { parseShard } from './shard.js';

/** The longest manifest line read (a real one is about 200 bytes). */
export const MAX_MANIFEST_LINE_BYTES = 64 * 1024;

/** A manifest file and the checkpoints that vouch for it, checked for consistency before reading. */
export interface ManifestSource {
  readonly side: ManifestSide;
  readonly file: string;
  /** one per shard, in shard order (one, with shard null, for an unsharded scan) */
  readonly checkpoints: readonly { readonly path: string; readonly checkpoint: Checkpoint }[];
  readonly schId: string;
  readonly formUuid: string;
  /** `i/n` of each checkpoint, in order; `[null]` for an unsharded scan */
  readonly shards: readonly (string | null)[];
  /** the shards cover the whole key space (an unsharded scan, or all n shards of one split) */
  readonly wholeKeySpace: boolean;
  readonly bytes: number;
  readonly rows: number;
  /**
   * the earliest completion time of the checkpoints: the manifest is only as fresh as its oldest
   * shard, and a proof's age (retire-absent) counts from it
   */
  readonly completedAt: string;
}

/**
 * Loads and cross-checks the checkpoints of a manifest file. Refusals are exit 4 (the manifest
 * cannot be shown complete): a missing, invalid or incomplete checkpoint, one of the other side,
 * checkpoints of different schools or forms, duplicate or mixed shards. A missing manifest file
 * is exit 2. The bytes themselves are checked while {@link ManifestReader} reads them.
 * @example const src = await loadManifestSource('fc', 'fc.jsonl', ['fc.checkpoint.json'])
 */
export async function loadManifestSource(
  side: ManifestSide,
  file: string,
  checkpointPaths: readonly string[],
): Promise<ManifestSource> {
  const label = `${side} manifest ${file}`;
  let size: number;
  try {
    const s = await stat(file);
    if (!s.isFile()) throw new UsageError(`${label} is not a file`);
    size = s.size;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(
      `cannot read ${label}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
    );
  }
  if (checkpointPaths.length === 0)
    throw new SafetyError(`${label}: no checkpoint given, so it cannot be shown complete`);
  const loaded: Array<{ path: string; checkpoint: Checkpoint }> = [];
  for (const p of checkpointPaths) {
    const path = resolve(p);
    const checkpoint = await readCheckpoint(path);
    if (checkpoint === null)
      throw new SafetyError(`${label}: checkpoint ${path} does not exist, so the manifest cannot be shown complete`);
    if (checkpoint.params.side !== side)
      throw new SafetyError(`${label}: checkpoint ${path} is of a ${checkpoint.params.side} scan`);
    if (!checkpoint.completed)
      throw new SafetyError(
        `${label}: checkpoint ${path} records an incomplete scan (${checkpoint.rows} rows so far); finish it with \`manifest scan\` first`,
      );
    loaded.push({ path, checkpoint });
  }
  const first = loaded[0]!.checkpoint.params;
  for (const { path, checkpoint } of loaded) {
    if (checkpoint.params.schId !== first.schId || checkpoint.params.formUuid !== first.formUuid) {
      throw new SafetyError(
        `${label}: checkpoint ${path} is of school ${checkpoint.params.schId} form ${checkpoint.params.formUuid}, the first of school ${first.schId} form ${first.formUuid}`,
      );
    }
  }
  const shards = loaded.map((l) => l.checkpoint.params.shard);
  let wholeKeySpace: boolean;
  if (shards.length === 1 && shards[0] === null) {
    wholeKeySpace = true;
  } else {
    const parsed = shards.map((s) => (s === null ? null : parseShard(s)));
    if (parsed.some((s) => s === null))
      throw new SafetyError(`${label}: an unsharded checkpoint cannot be combined with others`);
    const count = parsed[0]!.count;
    if (parsed.some((s) => s!.count !== count))
      throw new SafetyError(`${label}: the checkpoints split the key space differently (${shards.join(', ')})`);
    for (let i = 1; i < parsed.length; i++) {
      if (parsed[i]!.index <= parsed[i - 1]!.index)
        throw new SafetyError(
          `${label}: give the shard checkpoints once each, in shard order (the manifest is their outputs concatenated in that order); got ${shards.join(', ')}`,
        );
    }
    wholeKeySpace = parsed.length === count;
  }
  // The size is compared with the checkpoints at the end of the read, not here: a line problem
  // (a truncated last line, say) is reported as such — exit 2 naming the line — before the
  // bytes are found not to be what the scan wrote (exit 4).
  void size;
  const bytes = loaded.reduce((n, l) => n + l.checkpoint.outputBytes, 0);
  return {
    side,
    file: resolve(file),
    checkpoints: loaded,
    schId: first.schId,
    formUuid: first.formUuid,
    shards,
    wholeKeySpace,
    bytes,
    rows: loaded.reduce((n, l) => n + l.checkpoint.rows, 0),
    completedAt: loaded.map((l) => l.checkpoint.completedAt ?? l.checkpoint.updatedAt).sort()[0]!,
  };
}

/**
 * Streams the rows of a manifest, checking each line and the order, and — as the bytes go by —
 * each checkpoint's segment (SHA-256 and row count). After the last row, {@link finish} refuses
 * (exit 4) a manifest whose bytes differ from what its checkpoints recorded. Line problems are
 * exit 2 naming the file and line.
 * @example const r = await ManifestReader.open(src); for (let row = await r.next(); row; row = await r.next()) …; r.finish()
 */
export class ManifestReader {
  /** 1-based number of the last line returned */
  line = 0;
  /** SHA-256 (lowercase hex) of the whole file, once it has been read to the end */
  sha256: string | null = null;
  private readonly whole = createHash('sha256');
  private readonly splitter = new LineSplitter(MAX_MANIFEST_LINE_BYTES);
  private queue: LineEvent[] = [];
  private qi = 0;
  private ended = false;
  private lastByte = -1;
  private prev: string | null = null;
  // checkpoint segments
  private seg = 0;
  private segLeft: number;
  private segHash: Hash = createHash('sha256');
  private segRows = 0;
  /** the first disagreement with the checkpoints, raised by {@link finish} (line problems are reported first) */
  private problem: SafetyError | null = null;
  private readonly label: string;

  private constructor(
    readonly source: ManifestSource,
    private readonly fh: FileHandle,
  ) {
    this.label = `${source.side} manifest ${source.file}`;
    this.segLeft = source.checkpoints[0]?.checkpoint.outputBytes ?? 0;
  }

  static async open(source: ManifestSource): Promise<ManifestReader> {
    return new ManifestReader(source, await open(source.file, 'r'));
  }

  /** The next row, or null at the end of the file. */
  async next(): Promise<ManifestRow | null> {
    for (;;) {
      const row = this.tryNext();
      if (row !== undefined) return row;
      await this.fill();
    }
  }

  /**
   * The next row without waiting: the row, null at the end of the file, or undefined when the
   * next chunk must be read first ({@link next} does that). Lets a hot loop skip a promise per row.
   * @example let row = reader.tryNext(); if (row === undefined) row = await reader.next();
   */
  tryNext(): ManifestRow | null | undefined {
    if (this.qi >= this.queue.length) return this.ended ? null : undefined;
    const event = this.queue[this.qi++]!;
    this.line++;
    if (this.ended && this.qi === this.queue.length && this.lastByte !== 0x0a && this.lastByte !== -1) {
      // the last line of a file that does not end with LF
      throw this.bad('truncated: the file does not end with a newline');
    }
    if (event.kind === 'overlong') throw this.bad(`longer than ${MAX_MANIFEST_LINE_BYTES} bytes`);
    if (!isUtf8(event.bytes)) throw this.bad('not valid UTF-8');
    let row: ManifestRow;
    try {
      row = parseManifestLine(event.bytes.toString('utf8'), this.source.side);
    } catch (err) {
      if (err instanceof ManifestLineError) throw this.bad(err.message);
      throw err;
    }
    if (row.schId !== this.source.schId)
      throw this.bad(`schId ${row.schId} is not the school of its checkpoint (${this.source.schId})`);
    if (this.prev !== null && compareKeys(this.prev, row.answerUuid) >= 0) {
      throw this.bad(
        `answerUuid ${row.answerUuid} is not after ${this.prev}: the manifest must be sorted by answerUuid, without duplicates`,
      );
    }
    this.prev = row.answerUuid;
    return row;
  }

  /**
   * Checks the bytes read against the checkpoints; call after {@link next} returned null.
   * @throws {SafetyError} when a segment's SHA-256 or row count is not what its checkpoint recorded
   */
  finish(): void {
    if (!this.ended) throw new Error('finish() before the end of the manifest');
    if (this.problem) throw this.problem;
    if (this.seg < this.source.checkpoints.length) this.closeSegments();
    if (this.problem) throw this.problem;
    if (this.seg < this.source.checkpoints.length)
      throw new SafetyError(
        `${this.label} is shorter than its checkpoints record (${this.source.bytes} bytes): it is not the complete output of the scan`,
      );
  }

  async close(): Promise<void> {
    await this.fh.close().catch(() => undefined);
  }

  private bad(message: string): UsageError {
    return new UsageError(`${this.label} line ${this.line}: ${message}`);
  }

  private async fill(): Promise<void> {
    this.queue = [];
    this.qi = 0;
    const buf = Buffer.allocUnsafe(1024 * 1024);
    const { bytesRead } = await this.fh.read(buf, 0, buf.length, null);
    const onLine = (e: LineEvent) => this.queue.push(e);
    if (bytesRead === 0) {
      this.ended = true;
      this.sha256 = this.whole.digest('hex');
      this.splitter.end(onLine);
      return;
    }
    const chunk = buf.subarray(0, bytesRead);
    this.lastByte = chunk[bytesRead - 1]!;
    this.whole.update(chunk);
    this.account(chunk);
    this.splitter.push(chunk, onLine);
  }

  /** Feeds the chunk to the checkpoint segments it covers. */
  private account(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.seg >= this.source.checkpoints.length) {
        this.problem ??= new SafetyError(
          `${this.label} is longer than its checkpoints record (${this.source.bytes} bytes): it is not the output of that scan`,
        );
        return;
      }
      const take = Math.min(this.segLeft, chunk.length - at);
      const piece = chunk.subarray(at, at + take);
      this.segHash.update(piece);
      for (let i = piece.indexOf(0x0a); i >= 0; i = piece.indexOf(0x0a, i + 1)) this.segRows++;
      at += take;
      this.segLeft -= take;
      if (this.segLeft === 0) this.closeSegments();
    }
  }

  /** Closes the current segment (and any empty ones after it), checking each against its checkpoint. */
  private closeSegments(): void {
    while (this.seg < this.source.checkpoints.length && this.segLeft === 0) {
      const { path, checkpoint } = this.source.checkpoints[this.seg]!;
      const sha = this.segHash.digest('hex');
      if (sha !== checkpoint.sha256)
        this.problem ??= new SafetyError(
          `${this.label}: the bytes of checkpoint ${path} have SHA-256 ${sha}, not the ${checkpoint.sha256} it recorded: the manifest is not the output of that scan`,
        );
      if (this.segRows !== checkpoint.rows)
        this.problem ??= new SafetyError(
          `${this.label}: checkpoint ${path} recorded ${checkpoint.rows} rows, its bytes hold ${this.segRows}`,
        );
      this.seg++;
      this.segHash = createHash('sha256');
      this.segRows = 0;
      this.segLeft = this.source.checkpoints[this.seg]?.checkpoint.outputBytes ?? 0;
      if (this.seg < this.source.checkpoints.length && this.segLeft > 0) break;
    }
  }
}

/** What {@link verifyManifestFile} proves about a manifest. */
export interface VerifiedManifest {
  readonly source: ManifestSource;
  readonly rows: number;
  readonly bytes: number;
  /** SHA-256 (lowercase hex) of the whole file */
  readonly sha256: string;
  readonly completedAt: string;
}

/**
 * Reads a whole manifest once, checking every line and its checkpoint(s): the evidence a
 * retire proof names (row count, SHA-256 of the file, completion time). Exit 2 for a bad line,
 * exit 4 for a manifest its checkpoints do not vouch for.
 * @example const fc = await verifyManifestFile('fc', 'run/fc-manifest.jsonl', ['run/fc-manifest.checkpoint.json'])
 */
export async function verifyManifestFile(
  side: ManifestSide,
  file: string,
  checkpointPaths: readonly string[],
): Promise<VerifiedManifest> {
  const source = await loadManifestSource(side, file, checkpointPaths);
  const reader = await ManifestReader.open(source);
  try {
    let rows = 0;
    while ((await reader.next()) !== null) rows++;
    reader.finish();
    return { source, rows, bytes: source.bytes, sha256: reader.sha256!, completedAt: source.completedAt };
  } finally {
    await reader.close();
  }
}
