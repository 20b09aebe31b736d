// The waiting-room page's proof of work, run in a Web Worker so that the page stays responsive: find a
// nonce such that SHA-256(challenge + ":" + nonce) starts with `difficulty` zero bits, and post it back.
// SHA-256 is written out here (FIPS 180-4) because crypto.subtle is asynchronous, slow for millions of
// small hashes, and missing on plain-HTTP pages.
"use strict";

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const W = new Uint32Array(64);
const H = new Uint32Array(8);

// sha256 hashes the first n bytes of msg (whose buffer has room for the padding) into H.
function sha256(msg, n) {
  const blocks = Math.ceil((n + 9) / 64);
  const buf = msg;
  buf.fill(0, n, blocks * 64);
  buf[n] = 0x80;
  const bitsLen = n * 8;
  buf[blocks * 64 - 4] = bitsLen >>> 24;
  buf[blocks * 64 - 3] = bitsLen >>> 16;
  buf[blocks * 64 - 2] = bitsLen >>> 8;
  buf[blocks * 64 - 1] = bitsLen;
  H.set([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  for (let b = 0; b < blocks; b++) {
    const o = b * 64;
    for (let i = 0; i < 16; i++) {
      W[i] = (buf[o + 4 * i] << 24) | (buf[o + 4 * i + 1] << 16) | (buf[o + 4 * i + 2] << 8) | buf[o + 4 * i + 3];
    }
    for (let i = 16; i < 64; i++) {
      const a = W[i - 15], c = W[i - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((c >>> 17) | (c << 15)) ^ ((c >>> 19) | (c << 13)) ^ (c >>> 10);
      W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
    }
    let a = H[0], bb = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & bb) ^ (a & c) ^ (bb & c))) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = bb; bb = a; a = (t1 + t2) | 0;
    }
    H[0] += a; H[1] += bb; H[2] += c; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
  }
}

// zeros counts the leading zero bits of H.
function zeros() {
  let z = 0;
  for (let i = 0; i < 8; i++) {
    if (H[i] === 0) { z += 32; continue; }
    return z + Math.clz32(H[i]);
  }
  return z;
}

onmessage = (ev) => {
  const { challenge, difficulty } = ev.data;
  const prefix = new TextEncoder().encode(challenge + ":");
  const msg = new Uint8Array(prefix.length + 20 + 72);
  msg.set(prefix);
  for (let nonce = 0; ; nonce++) {
    const digits = String(nonce);
    for (let i = 0; i < digits.length; i++) msg[prefix.length + i] = digits.charCodeAt(i);
    sha256(msg, prefix.length + digits.length);
    if (zeros() >= difficulty) {
      postMessage({ nonce: digits });
      return;
    }
  }
};
