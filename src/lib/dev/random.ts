/**
 * Deterministic randomness for `dev seed`: every value is derived from the seed and a label
 * naming what it is for (`answer:17`), so one part of the data set never shifts another (more
 * consumers do not change the answers; faults do not change the normal rows' event ids).
 */
import { createHash } from 'node:crypto';

function digest(seed: number, parts: readonly (string | number)[]): Buffer {
  return createHash('sha256')
    .update(`fc-dev-seed\u0000${seed}\u0000${parts.join('\u0000')}`)
    .digest();
}

/**
 * A UUID (version-4 layout) derived from the seed and the parts.
 * @example seededUuid(1, 'answer', 0) // always the same 36-character id for seed 1
 */
export function seededUuid(seed: number, ...parts: readonly (string | number)[]): string {
  const b = digest(seed, parts);
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/**
 * A small seeded generator (sfc32, 128-bit state from SHA-256 of seed and label).
 * @example const r = new Rng(42, 'answer', 7); r.int(1, 6)
 */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number, ...label: readonly (string | number)[]) {
    const h = digest(seed, label);
    this.a = h.readUInt32LE(0);
    this.b = h.readUInt32LE(4);
    this.c = h.readUInt32LE(8);
    this.d = h.readUInt32LE(12);
  }

  /** A float in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}
