/**
 * The evidence file of `projection repair-authoritative` (JSON lines, format
 * `fcctl.repair-evidence.v1`), appended (never rewritten) as the run goes — dry runs included,
 * marked `"dryRun": true` — and fsynced when the run ends:
 * - `{"type":"run", runId, proofId, consumerAppKey, mode, plan, planSha256, envelope, envelopeSha256, execute, maxRereads, concurrency, items, host, startedAt}`
 * - `{"type":"decision", …}` per decision (every attempt: a LOCAL_CHANGED that was re-read is a line
 *   too): result, code, reason, expected, observed local row, authoritative triple, event id and
 *   grant version, the grant read, write, written, raced;
 * - `{"type":"end", runId, exitCode, byResult, notRun, stoppedBy, endedAt}`.
 * Never a configuration value, URL, password or secret, and no snapshot body.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { UsageError } from '../cli/exit.js';

export const EVIDENCE_FORMAT = 'fcctl.repair-evidence.v1';

/**
 * An append-only JSON-lines file. Lines appended while a write is in flight are written together
 * by the next write (one system call for many decisions under concurrency); lines never
 * interleave and keep their order.
 */
export class EvidenceFile {
  private pending: Array<{ text: string; done: () => void; fail: (err: unknown) => void }> = [];
  private writing: Promise<void> | null = null;
  private failure: unknown = null;
  lines = 0;

  private constructor(
    readonly path: string,
    private readonly fh: FileHandle,
  ) {}

  /**
   * Opens (creating if needed) for appending; exit 2 when it cannot be opened, before anything
   * connects.
   * @example const evidence = await EvidenceFile.open('out/repair-evidence.jsonl')
   */
  static async open(path: string): Promise<EvidenceFile> {
    try {
      return new EvidenceFile(path, await open(path, 'a', 0o600));
    } catch (err) {
      throw new UsageError(`--evidence ${path}: cannot open for appending: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
    }
  }

  /** Appends one line; resolves once its bytes are written (not yet fsynced). */
  append(record: Readonly<Record<string, unknown>>): Promise<void> {
    const text = `${JSON.stringify({ format: EVIDENCE_FORMAT, ...record })}\n`;
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<void>((done, fail) => {
      this.pending.push({ text, done, fail });
      this.writing ??= this.drain();
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      try {
        if (this.failure) throw this.failure;
        const buf = Buffer.from(batch.map((b) => b.text).join(''), 'utf8');
        let done = 0;
        while (done < buf.length) done += (await this.fh.write(buf, done, buf.length - done)).bytesWritten;
        this.lines += batch.length;
        for (const b of batch) b.done();
      } catch (err) {
        this.failure ??= err;
        for (const b of batch) b.fail(err);
      }
    }
    this.writing = null;
  }

  /** Waits for pending lines, fsyncs and closes; safe to call twice. */
  async close(): Promise<void> {
    while (this.writing) await this.writing;
    try {
      await this.fh.sync();
    } catch {
      /* closed already */
    }
    await this.fh.close().catch(() => undefined);
  }
}
