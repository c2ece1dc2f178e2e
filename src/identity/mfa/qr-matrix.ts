/**
 * QR Code symbols (ISO/IEC 18004) for the otpauth:// URIs of authenticator registration: byte and
 * alphanumeric segments, error correction level M, the smallest version that holds the data, and one
 * fixed mask. It follows Project Nayuki's reference encoder, with the Reed-Solomon arithmetic on
 * log tables and the matrix in one flat array: a symbol is built in a fraction of the time the
 * general-purpose `qrcode` package takes (a third of a registration's CPU went there), and the
 * tests compare every module with that package's symbols across all forty versions.
 *
 * Level M: 15 % of the symbol can be lost (a glare, a crease) and it still scans, and the URI's
 * symbol stays small. Mask 2 (every third column inverted): any of the eight masks gives a valid
 * symbol, and scoring all eight to pick one costs three times the rest of the encoding.
 */

export type QrSegment = { mode: 'byte'; data: Uint8Array } | { mode: 'alphanumeric'; data: string };

/** A square symbol without its quiet zone: `dark[y * size + x]` is 1 for a dark module. */
export interface QrMatrix {
  size: number;
  dark: Uint8Array;
}

export const MASK_PATTERN = 2;
/** Level M's format-information bits ("00"); L, Q and H are 01, 11 and 10. */
const LEVEL_M_BITS = 0;

// Per version (index 0 unused): error correction codewords per block, and blocks, at level M.
const ECC_PER_BLOCK = [-1, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28];
const BLOCKS = [-1, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49];

const ALPHANUMERIC = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:';

function alphanumericValue(text: string, i: number): number {
  const value = ALPHANUMERIC.indexOf(text[i]);
  if (value < 0) throw new RangeError(`not an alphanumeric-mode character: ${JSON.stringify(text[i])}`);
  return value;
}

// GF(256) with the QR polynomial x^8 + x^4 + x^3 + x^2 + 1.
const EXP = new Uint8Array(510);
const LOG = new Uint8Array(256);
for (let i = 0, x = 1; i < 255; i++) {
  EXP[i] = EXP[i + 255] = x;
  LOG[x] = i;
  x = (x << 1) ^ (x & 0x80 ? 0x11d : 0);
}

/**
 * The generator polynomial of the given degree, highest power first and its leading 1 left out, as
 * the logarithms of its coefficients (none of which is zero).
 */
const divisors = new Map<number, Uint8Array>();
function divisorLogs(degree: number): Uint8Array {
  const known = divisors.get(degree);
  if (known) return known;
  // The product of (x - 2^i) for i below degree.
  const poly = new Uint8Array(degree);
  poly[degree - 1] = 1;
  for (let i = 0, root = 1; i < degree; i++) {
    for (let j = 0; j < degree; j++) {
      poly[j] = poly[j] === 0 ? 0 : EXP[LOG[poly[j]] + LOG[root]];
      if (j + 1 < degree) poly[j] ^= poly[j + 1];
    }
    root = EXP[LOG[root] + 1];
  }
  if (poly.includes(0)) throw new Error(`QR generator polynomial of degree ${degree} has a zero coefficient`);
  const logs = poly.map((c) => LOG[c]);
  divisors.set(degree, logs);
  return logs;
}

/** Reed-Solomon error correction codewords of `data`: the remainder of its division by the generator. */
function remainder(data: Uint8Array, degree: number): Uint8Array {
  const divisor = divisorLogs(degree);
  const result = new Uint8Array(degree);
  for (let k = 0; k < data.length; k++) {
    const factor = data[k] ^ result[0];
    if (factor === 0) {
      result.copyWithin(0, 1);
      result[degree - 1] = 0;
      continue;
    }
    const logFactor = LOG[factor];
    for (let i = 0; i < degree - 1; i++) result[i] = result[i + 1] ^ EXP[divisor[i] + logFactor];
    result[degree - 1] = EXP[divisor[degree - 1] + logFactor];
  }
  return result;
}

/** Data modules of a version: everything but function patterns and format and version information. */
function rawDataModules(version: number): number {
  let result = (16 * version + 128) * version + 64;
  if (version >= 2) {
    const align = Math.floor(version / 7) + 2;
    result -= (25 * align - 10) * align - 55;
    if (version >= 7) result -= 36;
  }
  return result;
}

const dataCodewords = (version: number): number => Math.floor(rawDataModules(version) / 8) - ECC_PER_BLOCK[version] * BLOCKS[version];

function countBits(segment: QrSegment, version: number): number {
  if (segment.mode === 'byte') return version < 10 ? 8 : 16;
  return version < 10 ? 9 : version < 27 ? 11 : 13;
}

function segmentBits(segment: QrSegment, version: number): number {
  const payload = segment.mode === 'byte' ? segment.data.length * 8 : Math.floor(segment.data.length / 2) * 11 + (segment.data.length % 2) * 6;
  return 4 + countBits(segment, version) + payload;
}

/** Bits appended most significant first into a byte array. */
class BitBuffer {
  readonly bytes: Uint8Array;
  length = 0;
  constructor(capacityBytes: number) {
    this.bytes = new Uint8Array(capacityBytes);
  }
  put(value: number, bits: number): void {
    for (let i = bits - 1; i >= 0; i--, this.length++) {
      if ((value >>> i) & 1) this.bytes[this.length >>> 3] |= 0x80 >>> (this.length & 7);
    }
  }
}

/** The data codewords of `segments` in `version`, with terminator and padding. */
function encodeData(segments: QrSegment[], version: number, capacity: number): Uint8Array {
  const buffer = new BitBuffer(capacity);
  for (const segment of segments) {
    if (segment.mode === 'byte') {
      buffer.put(0b0100, 4);
      buffer.put(segment.data.length, countBits(segment, version));
      for (const byte of segment.data) buffer.put(byte, 8);
    } else {
      const text = segment.data;
      buffer.put(0b0010, 4);
      buffer.put(text.length, countBits(segment, version));
      let i = 0;
      for (; i + 1 < text.length; i += 2) buffer.put(alphanumericValue(text, i) * 45 + alphanumericValue(text, i + 1), 11);
      if (i < text.length) buffer.put(alphanumericValue(text, i), 6);
    }
  }
  // Terminator (up to four zero bits), zeros to the byte boundary (already zero), then alternating pad bytes.
  buffer.length = Math.min(buffer.length + 4, capacity * 8);
  for (let i = Math.ceil(buffer.length / 8), pad = 0xec; i < capacity; i++, pad ^= 0xec ^ 0x11) buffer.bytes[i] = pad;
  return buffer.bytes;
}

/** Splits the data into blocks, appends each block's error correction, and interleaves them. */
function withErrorCorrection(data: Uint8Array, version: number): Uint8Array {
  const blocks = BLOCKS[version];
  const eccLength = ECC_PER_BLOCK[version];
  const raw = Math.floor(rawDataModules(version) / 8);
  const shortBlocks = blocks - (raw % blocks);
  const shortData = Math.floor(raw / blocks) - eccLength;
  const result = new Uint8Array(raw);
  for (let b = 0, offset = 0; b < blocks; b++) {
    const length = shortData + (b < shortBlocks ? 0 : 1);
    const block = data.subarray(offset, offset + length);
    offset += length;
    // Data codeword i of every block comes before codeword i + 1 of any; long blocks have one more.
    for (let i = 0; i < length; i++) result[i < shortData ? i * blocks + b : shortData * blocks + (b - shortBlocks)] = block[i];
    const ecc = remainder(block, eccLength);
    const eccStart = shortData * blocks + (blocks - shortBlocks);
    for (let i = 0; i < eccLength; i++) result[eccStart + i * blocks + b] = ecc[i];
  }
  return result;
}

function alignmentPositions(version: number, size: number): number[] {
  if (version === 1) return [];
  const count = Math.floor(version / 7) + 2;
  const step = Math.floor((version * 8 + count * 3 + 5) / (count * 4 - 4)) * 2;
  const positions = [6];
  for (let pos = size - 7; positions.length < count; pos -= step) positions.splice(1, 0, pos);
  return positions;
}

/** The symbol of `segments`; throws RangeError when they do not fit in version 40. */
export function encodeQr(segments: QrSegment[]): QrMatrix {
  let version = 1;
  for (; ; version++) {
    if (version > 40) throw new RangeError('data too long for a QR code');
    let bits = 0;
    for (const segment of segments) bits += segmentBits(segment, version);
    if (bits <= dataCodewords(version) * 8) break;
  }
  const codewords = withErrorCorrection(encodeData(segments, version, dataCodewords(version)), version);

  const size = version * 4 + 17;
  const dark = new Uint8Array(size * size);
  const fixed = new Uint8Array(size * size);
  const set = (x: number, y: number, isDark: boolean) => {
    dark[y * size + x] = isDark ? 1 : 0;
    fixed[y * size + x] = 1;
  };

  // Timing patterns, then finders (with their separators), alignment patterns, format and version information.
  for (let i = 0; i < size; i++) {
    set(6, i, i % 2 === 0);
    set(i, 6, i % 2 === 0);
  }
  for (const [cx, cy] of [[3, 3], [size - 4, 3], [3, size - 4]]) {
    for (let dy = -4; dy <= 4; dy++) {
      for (let dx = -4; dx <= 4; dx++) {
        const x = cx + dx;
        const y = cy + dy;
        const ring = Math.max(Math.abs(dx), Math.abs(dy));
        if (x >= 0 && x < size && y >= 0 && y < size) set(x, y, ring !== 2 && ring !== 4);
      }
    }
  }
  const align = alignmentPositions(version, size);
  for (let i = 0; i < align.length; i++) {
    for (let j = 0; j < align.length; j++) {
      // The three corners with finder patterns have none.
      if ((i === 0 && j === 0) || (i === 0 && j === align.length - 1) || (i === align.length - 1 && j === 0)) continue;
      for (let dy = -2; dy <= 2; dy++) {
        for (let dx = -2; dx <= 2; dx++) set(align[i] + dx, align[j] + dy, Math.max(Math.abs(dx), Math.abs(dy)) !== 1);
      }
    }
  }
  drawFormatBits(set, size);
  if (version >= 7) {
    let rem = version;
    for (let i = 0; i < 12; i++) rem = (rem << 1) ^ ((rem >>> 11) * 0x1f25);
    const bits = (version << 12) | rem;
    for (let i = 0; i < 18; i++) {
      const bit = ((bits >>> i) & 1) === 1;
      const a = size - 11 + (i % 3);
      const b = Math.floor(i / 3);
      set(a, b, bit);
      set(b, a, bit);
    }
  }

  // Codewords in the zigzag of two-module columns from the bottom right, skipping the timing column;
  // the mask inverts every third column of data modules.
  const totalBits = codewords.length * 8;
  let bit = 0;
  for (let right = size - 1; right >= 1; right -= 2) {
    if (right === 6) right = 5;
    const upward = ((right + 1) & 2) === 0;
    for (let vert = 0; vert < size; vert++) {
      const y = upward ? size - 1 - vert : vert;
      for (let x = right; x >= right - 1; x--) {
        const at = y * size + x;
        if (fixed[at]) continue;
        const value = bit < totalBits ? (codewords[bit >>> 3] >>> (7 - (bit & 7))) & 1 : 0;
        bit++;
        dark[at] = value ^ (x % 3 === 0 ? 1 : 0);
      }
    }
  }
  return { size, dark };
}

/** Format information (level M, the mask) with its BCH code, in both copies. */
function drawFormatBits(set: (x: number, y: number, dark: boolean) => void, size: number): void {
  const data = (LEVEL_M_BITS << 3) | MASK_PATTERN;
  let rem = data;
  for (let i = 0; i < 10; i++) rem = (rem << 1) ^ ((rem >>> 9) * 0x537);
  const bits = ((data << 10) | rem) ^ 0x5412;
  const bitAt = (i: number) => ((bits >>> i) & 1) === 1;
  for (let i = 0; i <= 5; i++) set(8, i, bitAt(i));
  set(8, 7, bitAt(6));
  set(8, 8, bitAt(7));
  set(7, 8, bitAt(8));
  for (let i = 9; i < 15; i++) set(14 - i, 8, bitAt(i));
  for (let i = 0; i < 8; i++) set(size - 1 - i, 8, bitAt(i));
  for (let i = 8; i < 15; i++) set(8, size - 15 + i, bitAt(i));
  set(8, size - 8, true);
}
