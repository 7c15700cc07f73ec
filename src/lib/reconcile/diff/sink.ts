import { createHash, type Hash } from 'node:crypto';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { tempPathFor } from '../../files/atomic.js';

/** A temp file that becomes `finalPath` on commit; counts lines and hashes what it writes. */
export class Sink {
  rows = 0;
  private readonly hash: Hash = createHash('sha256');
  private parts: string[] = [];
  private size = 0;

  private constructor(
    readonly finalPath: string,
    private readonly tmp: string,
    private readonly fh: FileHandle,
  ) {}

  static async open(finalPath: string): Promise<Sink> {
    const tmp = tempPathFor(finalPath);
    return new Sink(finalPath, tmp, await open(tmp, 'wx', 0o600));
  }

  /** Buffers text; {@link full} says when a {@link flush} is due. */
  write(text: string, rows = 1): void {
    this.parts.push(text);
    this.size += text.length;
    this.rows += rows;
  }

  get full(): boolean {
    return this.size >= 256 * 1024;
  }

  async flush(): Promise<void> {
    if (this.parts.length === 0) return;
    const buf = Buffer.from(this.parts.join(''), 'utf8');
    this.parts = [];
    this.size = 0;
    this.hash.update(buf);
    let done = 0;
    while (done < buf.length) done += (await this.fh.write(buf, done, buf.length - done)).bytesWritten;
  }

  /** Flushes and fsyncs; the file stays under its temp name until {@link rename}. */
  async seal(): Promise<{ rows: number; sha256: string }> {
    await this.flush();
    await this.fh.sync();
    await this.fh.close();
    return { rows: this.rows, sha256: this.hash.digest('hex') };
  }

  async rename(): Promise<void> {
    await rename(this.tmp, this.finalPath);
  }

  async discard(): Promise<void> {
    await this.fh.close().catch(() => undefined);
    await unlink(this.tmp).catch(() => undefined);
  }
}
