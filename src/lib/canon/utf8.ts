/**
 * Strict UTF-8 (RFC 3629) helpers. Validation itself is `buffer.isUtf8` (native); this finds
 * where the first bad byte is, which is needed only to report an error.
 */

/** Offset of the first byte that is not part of a well-formed UTF-8 sequence, or -1. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b0 = bytes[i] as number;
    if (b0 < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf; // allowed range of the second byte
    if (b0 >= 0xc2 && b0 <= 0xdf) need = 1;
    else if (b0 >= 0xe0 && b0 <= 0xef) {
      need = 2;
      if (b0 === 0xe0) lo = 0xa0; // overlong
      if (b0 === 0xed) hi = 0x9f; // UTF-16 surrogates
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      need = 3;
      if (b0 === 0xf0) lo = 0x90; // overlong
      if (b0 === 0xf4) hi = 0x8f; // above U+10FFFF
    } else return i; // continuation byte, C0/C1 overlong lead, F5..FF
    const b1 = bytes[i + 1];
    if (b1 === undefined || b1 < lo || b1 > hi) return i;
    for (let k = 2; k <= need; k++) {
      const bk = bytes[i + k];
      if (bk === undefined /* truncated */ || bk < 0x80 || bk > 0xbf) return i;
    }
    i += need + 1;
  }
  return -1;
}

/**
 * Index (in UTF-16 code units) of the first unpaired surrogate of a JS string, or -1.
 * Such a string has no UTF-8 form, so as a JSON text it is refused like invalid UTF-8.
 */
export function firstLoneSurrogate(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++;
        continue;
      }
    }
    return i;
  }
  return -1;
}
