/**
 * A QR symbol as a PNG: 1-bit grayscale (a QR code has two colours), a quiet zone, each module
 * `scale` pixels square. The image data is compressed here, not by zlib, whose set-up alone cost a
 * quarter of a render: one deflate block whose Huffman code was designed once for QR scanlines, and
 * matches only where such an image repeats itself (a pixel row equal to the module row's above, the
 * zero rows). A registration's PNG is some 40 % larger than zlib's default level made (about 880
 * bytes against 620), and takes a fifth of the time.
 */
import { crc32 } from 'node:zlib';
import type { QrMatrix } from './qr-matrix.ts';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'ascii');
  out.set(data, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

// RFC 1951 §3.2.5: the base length or distance of each code, and its count of extra bits.
const LENGTH_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LENGTH_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DISTANCE_BASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577];
const DISTANCE_EXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
const MAX_MATCH = 258;
const END_OF_BLOCK = 256;
/** Where the code-length code's own lengths are written (RFC 1951 §3.2.7). */
const CODE_LENGTH_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/**
 * The Huffman code every image is written with, designed once for QR scanlines rather than built
 * per image: their bytes are white (0xff) or dark (0x00) pixel pairs, or an edge (0x0f, 0xf0), and
 * those take two or three bits; matches take eight; every other byte still has a code.
 */
function literalLengths(): Uint8Array {
  const lengths = new Uint8Array(286).fill(11);
  lengths[0xff] = 2;
  lengths[0x00] = 2;
  lengths[0x0f] = 3;
  lengths[0xf0] = 3;
  lengths[0x02] = 8; // the "Up" filter byte
  lengths.fill(8, 257);
  // Twenty codes of ten bits make the code complete (a decoder refuses one that is not).
  lengths[END_OF_BLOCK] = 10;
  for (let s = 1, tens = 19; tens > 0; s++) if (lengths[s] === 11) { lengths[s] = 10; tens--; }
  return lengths;
}
/** The 30 distance codes at five bits, two of them at four to make the code complete. */
const DISTANCE_LENGTHS = new Uint8Array(30).fill(5).fill(4, 0, 2);

/** Canonical Huffman codes for `lengths` (RFC 1951 §3.2.2), bit-reversed to be written LSB first. */
function canonicalCodes(lengths: Uint8Array): Uint16Array {
  const count = new Uint16Array(16);
  for (const length of lengths) count[length]++;
  count[0] = 0;
  let kraft = 0;
  for (let bits = 1; bits < 16; bits++) kraft += count[bits] / 2 ** bits;
  if (kraft !== 1) throw new Error('deflate: the code lengths do not make a complete code');
  const next = new Uint16Array(16);
  for (let bits = 1, code = 0; bits < 16; bits++) {
    code = (code + count[bits - 1]) << 1;
    next[bits] = code;
  }
  const codes = new Uint16Array(lengths.length);
  lengths.forEach((length, symbol) => {
    if (length === 0) return;
    const code = next[length]++;
    let reversed = 0;
    for (let i = 0; i < length; i++) reversed |= ((code >>> i) & 1) << (length - 1 - i);
    codes[symbol] = reversed;
  });
  return codes;
}

/** Bits written so far: whole bytes, and the bits of an unfinished one. */
interface Bits {
  bytes: Uint8Array;
  pending: number;
  pendingCount: number;
}

/** Bits written least significant first, as deflate packs them. */
class BitWriter {
  readonly out: Uint8Array;
  length = 0;
  private pending = 0;
  private pendingCount = 0;
  constructor(capacity: number) {
    this.out = new Uint8Array(capacity);
  }
  put(value: number, bits: number): void {
    this.pending |= value << this.pendingCount;
    this.pendingCount += bits;
    while (this.pendingCount >= 8) {
      this.out[this.length++] = this.pending & 0xff;
      this.pending >>>= 8;
      this.pendingCount -= 8;
    }
  }
  /** Appends `bits` to a writer that is at a byte boundary. */
  append(bits: Bits): void {
    if (this.pendingCount !== 0) throw new Error('BitWriter.append: not at a byte boundary');
    this.out.set(bits.bytes, this.length);
    this.length += bits.bytes.length;
    this.pending = bits.pending;
    this.pendingCount = bits.pendingCount;
  }
  written(): Bits {
    return { bytes: this.out.slice(0, this.length), pending: this.pending, pendingCount: this.pendingCount };
  }
  /** Zero bits to the next byte boundary. */
  align(): void {
    if (this.pendingCount > 0) this.put(0, 8 - this.pendingCount);
  }
}

const LITERAL_LENGTHS = literalLengths();
const LITERAL_CODES = canonicalCodes(LITERAL_LENGTHS);
const DISTANCE_CODES = canonicalCodes(DISTANCE_LENGTHS);

/** The block header that carries the code above: the same bits for every image, so written once. */
const BLOCK_HEADER = (() => {
  // The code-length code: lengths 11 and 8 (the most frequent) in two bits, 2, 5 and 10 in three, 3 and 4 in four.
  const clLengths = new Uint8Array(19);
  clLengths[11] = 2;
  clLengths[8] = 2;
  for (const length of [2, 5, 10]) clLengths[length] = 3;
  for (const length of [3, 4]) clLengths[length] = 4;
  const clCodes = canonicalCodes(clLengths);
  let hclen = CODE_LENGTH_ORDER.length;
  while (clLengths[CODE_LENGTH_ORDER[hclen - 1]] === 0) hclen--;
  const writer = new BitWriter(256);
  writer.put(1, 1); // the last block
  writer.put(2, 2); // with dynamic Huffman codes
  writer.put(LITERAL_LENGTHS.length - 257, 5);
  writer.put(DISTANCE_LENGTHS.length - 1, 5);
  writer.put(hclen - 4, 4);
  for (let i = 0; i < hclen; i++) writer.put(clLengths[CODE_LENGTH_ORDER[i]], 3);
  for (const length of [...LITERAL_LENGTHS, ...DISTANCE_LENGTHS]) writer.put(clCodes[length], clLengths[length]);
  return writer.written();
})();

// Lengths 3 to 258 as their symbol and extra bits.
const LENGTH_SYMBOL = new Uint16Array(MAX_MATCH + 1);
const LENGTH_EXTRA_BITS = new Uint8Array(MAX_MATCH + 1);
const LENGTH_EXTRA_VALUE = new Uint8Array(MAX_MATCH + 1);
for (let code = 0; code < LENGTH_BASE.length; code++) {
  const last = code + 1 < LENGTH_BASE.length ? Math.min(LENGTH_BASE[code + 1] - 1, MAX_MATCH) : MAX_MATCH;
  for (let length = LENGTH_BASE[code]; length <= last; length++) {
    LENGTH_SYMBOL[length] = 257 + code;
    LENGTH_EXTRA_BITS[length] = LENGTH_EXTRA[code];
    LENGTH_EXTRA_VALUE[length] = length - LENGTH_BASE[code];
  }
}

/** A match distance as its code and extra bits, worked out once per image. */
interface Distance {
  distance: number;
  code: number;
  extra: number;
}

function distanceOf(distance: number): Distance {
  let code = DISTANCE_BASE.length - 1;
  while (DISTANCE_BASE[code] > distance) code--;
  return { distance, code, extra: distance - DISTANCE_BASE[code] };
}

function putMatch(writer: BitWriter, length: number, { code, extra }: Distance): void {
  const symbol = LENGTH_SYMBOL[length];
  writer.put(LITERAL_CODES[symbol], LITERAL_LENGTHS[symbol]);
  writer.put(LENGTH_EXTRA_VALUE[length], LENGTH_EXTRA_BITS[length]);
  writer.put(DISTANCE_CODES[code], DISTANCE_LENGTHS[code]);
  writer.put(extra, DISTANCE_EXTRA[code]);
}

/** The row of pixels for module row `my` (a quiet-zone row when outside the symbol), after its filter byte 0. */
function drawRow(row: Uint8Array, { size, dark }: QrMatrix, my: number, margin: number, scale: number): void {
  // All white (bit 1), then the bits of dark modules cleared.
  row.fill(0xff, 1);
  row[0] = 0;
  if (my < 0 || my >= size) return;
  for (let mx = 0, at = my * size; mx < size; mx++, at++) {
    if (!dark[at]) continue;
    // The module's pixels, a byte's worth at a time.
    for (let x = (mx + margin) * scale, end = x + scale; x < end;) {
      const bit = x & 7;
      const span = Math.min(8 - bit, end - x);
      row[1 + (x >> 3)] &= ~((0xff >> bit) & (0xff << (8 - bit - span)));
      x += span;
    }
  }
}

/** A repeat of `length` bytes (at least 3) from `distance` back, in matches of at most 258. */
function putRepeat(writer: BitWriter, length: number, distance: Distance): void {
  while (length > 0) {
    // Never leave a remainder too short to be a match.
    const take = length > MAX_MATCH ? Math.min(MAX_MATCH, length - 3) : length;
    putMatch(writer, take, distance);
    length -= take;
  }
}

const ADLER_BASE = 65521;

/**
 * The PNG of `matrix` with a quiet zone of `margin` modules and `scale` pixels per module.
 *
 * Each module row is `scale` identical pixel rows: the first is written out (PNG filter 0, none),
 * the others as filter 2 ("Up", the difference from the row above), all zeros. The deflate stream
 * is written straight from that structure: a pixel row equal to the one of the module row above is
 * one match, the zero rows are matches too, and the other bytes are literals.
 */
export function encodeQrPng(matrix: QrMatrix, margin: number, scale: number): Buffer {
  const modules = matrix.size + 2 * margin;
  const pixels = modules * scale;
  const rowBytes = 1 + Math.ceil(pixels / 8);
  const zeroRowsLength = (scale - 1) * rowBytes;
  const byteBefore = distanceOf(1);
  const rowAbove = distanceOf(rowBytes);
  const moduleRowAbove = distanceOf(scale * rowBytes);
  // Per module row: at most 11 bits a literal, and 31 bits a match of at least 128 bytes, or of the
  // (at most four) shorter remainders.
  const bandBits = 11 * (rowBytes + 2) + 31 * (Math.ceil((scale * rowBytes) / 128) + 4);
  const writer = new BitWriter(2 + BLOCK_HEADER.bytes.length + Math.ceil((modules * bandBits) / 8) + 2 + 4);
  writer.put(0x78, 8); // deflate, 32 KiB window
  writer.put(0x01, 8); // no preset dictionary; check bits
  writer.append(BLOCK_HEADER);
  // Adler-32 of the scanlines, kept as they are written: each sum stays below 2^32 within a row.
  let a = 1;
  let b = 0;
  let row = new Uint8Array(rowBytes);
  let above = new Uint8Array(rowBytes);
  for (let band = 0; band < modules; band++) {
    drawRow(row, matrix, band - margin, margin, scale);
    let same = band > 0;
    for (let i = 0; same && i < rowBytes; i++) same = row[i] === above[i];
    if (same) putMatch(writer, rowBytes, moduleRowAbove);
    for (let i = 0; i < rowBytes; i++) {
      if (!same) writer.put(LITERAL_CODES[row[i]], LITERAL_LENGTHS[row[i]]);
      a += row[i];
      b += a;
    }
    a %= ADLER_BASE;
    b %= ADLER_BASE;
    const drawn = row;
    row = above;
    above = drawn;
    if (scale === 1) continue;
    // The first zero row: its filter byte, a zero, and the rest copied from that zero.
    writer.put(LITERAL_CODES[2], LITERAL_LENGTHS[2]);
    writer.put(LITERAL_CODES[0], LITERAL_LENGTHS[0]);
    if (rowBytes - 2 >= 3) putRepeat(writer, rowBytes - 2, byteBefore);
    else for (let i = 2; i < rowBytes; i++) writer.put(LITERAL_CODES[0], LITERAL_LENGTHS[0]);
    // The others copy the first.
    if (zeroRowsLength > rowBytes) putRepeat(writer, zeroRowsLength - rowBytes, rowAbove);
    // Each zero row adds its filter byte 2 to a, and a to b once per byte.
    for (let r = 1; r < scale; r++) {
      a += 2;
      b = (b + a * rowBytes) % ADLER_BASE;
    }
    a %= ADLER_BASE;
  }
  writer.put(LITERAL_CODES[END_OF_BLOCK], LITERAL_LENGTHS[END_OF_BLOCK]);
  writer.align();
  const adler = ((b << 16) | a) >>> 0;
  for (const shift of [24, 16, 8, 0]) writer.put((adler >>> shift) & 0xff, 8);

  const header = Buffer.alloc(13);
  header.writeUInt32BE(pixels, 0);
  header.writeUInt32BE(pixels, 4);
  header[8] = 1; // bit depth
  header[9] = 0; // colour type: grayscale
  const idat = writer.out.subarray(0, writer.length);
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', header), chunk('IDAT', idat), chunk('IEND', new Uint8Array(0))]);
}
