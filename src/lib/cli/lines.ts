/**
 * Byte-level line reading and buffered writing for JSON Lines commands (`canon hash --lines`):
 * constant memory whatever the input size, never decoding the input to JS strings.
 */

/**
 * One input line: its bytes (LF removed, and one CR before it), or a line over the limit (skipped).
 * @example const onLine = (e: LineEvent) => console.log(e.kind === 'line' ? e.bytes.length : `over the limit: ${e.bytes} bytes`);
 */
export type LineEvent =
  | { readonly kind: 'line'; readonly bytes: Buffer }
  | { readonly kind: 'overlong'; readonly bytes: number };

/**
 * Splits a byte stream on LF (0x0A), chunk by chunk, calling `onLine` for each complete line in
 * order. A line ends at LF; one CR just before it is dropped (CRLF files read like LF files). A
 * final line without LF is a line; an input that ends with LF has no extra empty line after it.
 * A line longer than `maxLineBytes` is not kept: its bytes are counted and dropped as they come,
 * and it is reported as `overlong` when its LF arrives, so memory stays bounded by the limit.
 * @example
 * const s = new LineSplitter(64 * 1024 * 1024);
 * for await (const chunk of stream) s.push(chunk, onLine);
 * s.end(onLine);
 */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** bytes of the current over-long line seen so far, or -1 when not skipping one */
  private skipped = -1;

  constructor(readonly maxLineBytes: number) {
    if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 1)
      throw new TypeError(`maxLineBytes must be a positive integer, got ${maxLineBytes}`);
  }

  /** Feeds one chunk; calls `onLine` for every line it completes. */
  push(chunk: Buffer, onLine: (line: LineEvent) => void): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) {
        this.keep(chunk.subarray(start));
        return;
      }
      this.finish(chunk.subarray(start, nl), onLine);
      start = nl + 1;
    }
  }

  /** Ends the input: a last line without LF is reported. */
  end(onLine: (line: LineEvent) => void): void {
    if (this.skipped >= 0 || this.pendingBytes > 0) this.finish(Buffer.alloc(0), onLine);
  }

  private keep(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.skipped >= 0) {
      this.skipped += piece.length;
      return;
    }
    if (this.pendingBytes + piece.length > this.maxLineBytes) {
      this.skipped = this.pendingBytes + piece.length;
      this.reset();
      return;
    }
    this.pending.push(piece);
    this.pendingBytes += piece.length;
  }

  private finish(piece: Buffer, onLine: (line: LineEvent) => void): void {
    if (this.skipped >= 0) {
      const bytes = this.skipped + piece.length;
      this.skipped = -1;
      onLine({ kind: 'overlong', bytes });
      return;
    }
    const total = this.pendingBytes + piece.length;
    if (total > this.maxLineBytes) {
      this.reset();
      onLine({ kind: 'overlong', bytes: total });
      return;
    }
    let line = this.pending.length === 0 ? piece : Buffer.concat([...this.pending, piece], total);
    this.reset();
    if (line.length > 0 && line[line.length - 1] === 0x0d) line = line.subarray(0, line.length - 1);
    onLine({ kind: 'line', bytes: line });
  }

  private reset(): void {
    this.pending = [];
    this.pendingBytes = 0;
  }
}

/**
 * Collects output and writes it in blocks, waiting for `drain` whenever the stream says its buffer
 * is full (`write()` returned false), so a slow reader slows the producer instead of growing memory.
 * A closed pipe (EPIPE: `fcctl … | head`) sets `closed`; the caller stops reading.
 * @example
 * const w = new BufferedWriter(io.stdout);
 * w.write(`${hash}\n`);
 * await w.flush();
 */
export class BufferedWriter {
  private parts: Array<string | Buffer> = [];
  private size = 0;
  private error: Error | undefined;
  /** the reader went away (EPIPE); further output is dropped */
  closed = false;

  constructor(
    private readonly stream: NodeJS.WritableStream,
    /** `flushIfFull()` writes once this many bytes (roughly) are buffered */
    readonly blockBytes = 64 * 1024,
  ) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') this.closed = true;
      else this.error = err;
    });
  }

  /** Buffers text or bytes; nothing is written until a flush. */
  write(part: string | Buffer): void {
    if (this.closed) return;
    this.parts.push(part);
    this.size += part.length;
  }

  /** Bytes (or characters) waiting to be written. */
  get buffered(): number {
    return this.size;
  }

  /** Writes what is buffered when it exceeds the block size. */
  async flushIfFull(): Promise<void> {
    if (this.size >= this.blockBytes) await this.flush();
  }

  /** Writes what is buffered and waits for `drain` if the stream asks for it. Throws a write error other than EPIPE. */
  async flush(): Promise<void> {
    if (this.error) throw this.error;
    if (this.size === 0 || this.closed) return;
    const parts = this.parts;
    this.parts = [];
    this.size = 0;
    const block = parts.every((p) => typeof p === 'string')
      ? (parts as string[]).join('')
      : Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
    if (!this.stream.write(block)) await this.drain();
    if (this.error) throw this.error;
  }

  private drain(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.stream.off('drain', done);
        this.stream.off('error', done);
        this.stream.off('close', done);
        resolve();
      };
      this.stream.on('drain', done);
      this.stream.on('error', done);
      this.stream.on('close', done);
    });
  }
}
