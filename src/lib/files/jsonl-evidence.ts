/**
 * The evidence file of the commands that decide row by row (`projection repair-authoritative`,
 * `retire-absent`, `apply-command requeue`): JSON lines, appended (never rewritten) as the run
 * goes — dry runs included — and fsynced when the run ends. What the lines hold is each
 * command's (`lib/projection/repair-authoritative/evidence.ts`, `lib/retire-absent/retire/run.ts`, …); never a configuration
 * value, URL, password or secret.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { UsageError } from '../cli/exit.js';

export interface EvidenceFileOptions {
  /** written first in every line (`{"format": …, …}`); a line's own `format` member wins */
  readonly format?: string;
  /** the exit-2 message when the file cannot be opened (default: `--evidence PATH: cannot open for appending: CODE`) */
  readonly openError?: (path: string, why: string) => string;
}

const defaultOpenError = (path: string, why: string) => `--evidence ${path}: cannot open for appending: ${why}`;

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
    private readonly format: string | undefined,
  ) {}

  /**
   * Opens (creating if needed) for appending; exit 2 when it cannot be opened, before anything
   * connects.
   * @example const evidence = await EvidenceFile.open('out/repair-evidence.jsonl', { format: 'fcctl.repair-evidence.v1' })
   */
  static async open(path: string, options: EvidenceFileOptions = {}): Promise<EvidenceFile> {
    try {
      return new EvidenceFile(path, await open(path, 'a', 0o600), options.format);
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new UsageError((options.openError ?? defaultOpenError)(path, why), { cause: err });
    }
  }

  /** Appends one line; resolves once its bytes are written (not yet fsynced). */
  append(record: Readonly<Record<string, unknown>>): Promise<void> {
    const text = `${JSON.stringify(this.format === undefined ? record : { format: this.format, ...record })}\n`;
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
