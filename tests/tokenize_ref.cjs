// tests/tokenize_ref.cjs: the reference side of tests/test_tokenize_ref.sh and of make bench, run
// with node. The reference is tiktoken's Rust core compiled to WebAssembly (npm package tiktoken),
// encoding "gpt2" with encode_ordinary; js-tiktoken (plain JavaScript) is only timed. NPM_DIR holds
// the packages (tools/npm_fetch.sh).
//
//   node tests/tokenize_ref.cjs NPM_DIR shard OUT.bin FILE...    an llm.c shard: per FILE, the end of
//                                                                text (50256) and then its tokens
//   node tests/tokenize_ref.cjs NPM_DIR cases DIR                the adversarial texts and three random
//                                                                ones (below), one file each
//   node tests/tokenize_ref.cjs NPM_DIR bench FILE SECONDS       MB/s of tiktoken and js-tiktoken on FILE
//
// A FILE that is not valid UTF-8 cannot be given to tiktoken, which takes strings. Its reference is
// the rule ./tokenize documents (dataset/bpe.h), computed here independently of the C code: every
// byte of an invalid sequence becomes U+FFFD, the text is cut by GPT-2's pattern as a JavaScript
// regular expression (with \s spelled out as Unicode's White_Space, which tiktoken's Rust regex
// uses: JavaScript's \s differs at U+0085 and U+FEFF), a piece of valid text is encoded by
// tiktoken, and a piece with invalid bytes is merged on its original bytes by tiktoken's loop,
// the ranks read from tiktoken (decode_single_token_bytes of every id).
"use strict";
const fs = require("fs");
const path = require("path");

const [npmDir, cmd, ...args] = process.argv.slice(2);
const need = (name) => require(path.resolve(npmDir, "node_modules", name));
const EOT = 50256;

// ---- the reference encoding of a file's bytes -------------------------------------------------------

const WS = "\\t\\n\\v\\f\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const PATTERN = new RegExp(`'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^${WS}\\p{L}\\p{N}]+|[${WS}]+(?![^${WS}])|[${WS}]+`, "gu");

// UTF-8 as Rust and WHATWG accept it: the length of the valid character at b[i], or 0
function utf8Length(b, i) {
  const c = b[i];
  if (c < 0x80) return 1;
  const k = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (!k || i + k > b.length) return 0;
  for (let j = 1; j < k; j++) {
    let lo = 0x80, hi = 0xbf;
    if (j === 1) {
      if (c === 0xe0) lo = 0xa0;
      if (c === 0xed) hi = 0x9f;
      if (c === 0xf0) lo = 0x90;
      if (c === 0xf4) hi = 0x8f;
    }
    if (b[i + j] < lo || b[i + j] > hi) return 0;
  }
  return k;
}

// every ordinary token's bytes (as a latin1 string) -> its id, from tiktoken itself
let ranks = null;
function rankOf(enc, bytes) {
  if (!ranks) {
    ranks = new Map();
    for (let id = 0; id < EOT; id++) ranks.set(Buffer.from(enc.decode_single_token_bytes(id)).toString("latin1"), id);
  }
  const r = ranks.get(Buffer.from(bytes).toString("latin1"));
  return r === undefined ? null : r;
}

// tiktoken's merge loop on bytes: the adjacent pair whose bytes are the lowest rank, leftmost on ties
function mergeBytes(enc, b) {
  const whole = rankOf(enc, b);
  if (whole !== null) return [whole];
  const start = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (;;) {
    let best = -1, bestRank = Infinity;
    for (let i = 0; i + 2 < start.length; i++) {
      const r = rankOf(enc, b.subarray(start[i], start[i + 2]));
      if (r !== null && r < bestRank) { bestRank = r; best = i; }
    }
    if (best < 0) break;
    start.splice(best + 1, 1);
  }
  return start.slice(0, -1).map((s, i) => rankOf(enc, b.subarray(s, start[i + 1])));
}

function invalidUtf8Tokens(enc, b) {
  let text = "";
  const byteAt = [];            // UTF-16 index -> byte offset
  const bad = new Uint8Array(b.length + 1);
  for (let i = 0; i < b.length;) {
    const k = utf8Length(b, i);
    const ch = k ? Buffer.from(b.subarray(i, i + k)).toString("utf8") : "\ufffd";
    if (!k) bad[i] = 1;
    for (let u = 0; u < ch.length; u++) byteAt.push(i);
    text += ch;
    i += k || 1;
  }
  byteAt.push(b.length);
  const out = [];
  for (const m of text.matchAll(PATTERN)) {
    const from = byteAt[m.index], to = byteAt[m.index + m[0].length];
    const piece = b.subarray(from, to);
    for (const t of bad.subarray(from, to).some((x) => x) ? mergeBytes(enc, piece) : enc.encode_ordinary(m[0])) out.push(t);
  }
  return out;
}

function referenceTokens(enc, b) {
  let text;
  try { text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(b); }
  catch (e) { return invalidUtf8Tokens(enc, b); }
  return Array.from(enc.encode_ordinary(text));
}

function writeShard(out, tokens) {
  const buf = Buffer.alloc(1024 + 2 * tokens.length);
  buf.writeInt32LE(20240520, 0);
  buf.writeInt32LE(1, 4);
  buf.writeInt32LE(tokens.length, 8);
  tokens.forEach((t, i) => buf.writeUInt16LE(t, 1024 + 2 * i));
  fs.writeFileSync(out, buf);
}

// ---- the adversarial texts -----------------------------------------------------------------------

const repeat = (s, n) => s.repeat(n);
const CASES = {
  "scripts": "Hello, wörld! Привет, мир. Γειά σου Κόσμε. שלום עולם. مرحبا بالعالم. नमस्ते दुनिया. 你好，世界。" +
    "こんにちは、世界！ 안녕하세요 세계. สวัสดีชาวโลก ሰላም ዓለም Բարեւ აშხარჰ ᏣᎳᎩ 𐌰𐌱𐌲𐌳 ꦲꦏ꧀ꦱꦫ Ελληνικά ŒUVRE ǅemal ǈ\n" +
    "Tiếng Việt có dấu. Ñandú. İstanbul ıi. ß ẞ ﬁ ﬀ. 𝐁𝐨𝐥𝐝 𝔉𝔯𝔞𝔨𝔱𝔲𝔯 𝕯𝖔𝖚𝖇𝖑𝖊. Garay 𐵐𐵑𐵒 Ol Onal 𞗐𞗑 and digits 𞗱𞗲.\n",
  "combining": "e\u0301te\u0301 n\u0303 a\u0308\u0304 Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334 " +
    "\u1100\u1161\u11a8 \u0915\u094d\u0937 \u0e01\u0e34\u0e48 a\u20dd \u0301\u0301start x\u200dy x\u200cy\n",
  "emoji": "👍 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇺🇸🇫🇷 #️⃣ 1️⃣ 🧑🏿‍🚀 😀😃😄 a😀b 😀a 1😀2 !😀? ✊🏾✊ 🫠🫨 ☺︎ ☺️\n",
  "digits": repeat("1234567890", 300) + " " + repeat("9", 1001) + " ١٢٣٤٥ ۱۲۳ ٣.١٤ ½ ¾ ² ³ Ⅻ ⅻ ① ⑳ 𝟘𝟙𝟚 " +
    "3.14159 1,000,000 1e10 0x1F 007 -42 +7 12:30 2024-05-20 ₁₂₃ ¹²³ 一二三\n",
  "whitespace": "a  b   c\t\td\n\ne\r\n\r\nf \u00a0g\u00a0\u00a0h\u3000i\u2003j\u2028k\u2029l\u0085m\u000bn\u000co \t \n x" +
    "  \u00a0 \u00a0x \u1680y \u202fz \u205f. \u180e \u200b \u2060 \ufeff\n\n\n   \t\n" + repeat(" ", 40) + "x" +
    repeat("\n", 30) + "y" + repeat("\t", 17) + "\u3000\u3000word   ",
  "contractions": "I'm you're he's we've they'll I'd can't DON'T I'M YOU'RE HE'S WE'VE THEY'LL I'D 'S 'LL 'Re 'rE " +
    "o'clock rock'n'roll ''s '''ll 's 't 're 've 'm 'll 'd 'x ' s'S don’t it‘s ʼs ′s ＇s it`s abc' ' ''\n'\n's",
  "runs": repeat("a", 5000) + " " + repeat("!", 3000) + " " + repeat(" ", 3000) + "x" + repeat("\n", 2000) +
    repeat("ab", 2000) + " " + repeat("a1", 1000) + " " + repeat("é", 700) + " " + repeat("中", 900) + repeat("😀", 300) +
    " " + repeat(".-", 800) + repeat("'", 500) + "s",
  "empty": "",
  "code": "def f(x):\n    return x**2  # comment\n\tif (a&&b) { c->d[i] = 0x1F; }\n#include <stdio.h>\n" +
    "https://example.com/a?b=c&d=e#f mailto:x@y.z <|endoftext|> <|endoftext|>hi {\"k\": [1, 2.5e-3, null]}\n" +
    "SELECT * FROM t WHERE a <> 'b''c';  $$ \\\\ \\n ~~~ ``` <div class=\"x\">&nbsp;</div>\r\n",
  "specials": "\ufeffBOM at the start, \ufeff inside. Soft\u00adhyphen. Non\ufffechars \uffff. Private \ue000\uf8ff " +
    "\u{f0000}\u{10fffd}. Replacement \ufffd char. NUL \u0000 and DEL \u007f and C1 \u0080\u009f. Tags \u{e0061}\u{e007f}.\n",
};

// Every code point of planes 0-3 and 14 (4-13 are unassigned, 15-16 private use) as "x  c's":
// the class decides the pieces whatever the merges do. White space c: "x", "  ", c, "'s" (the run
// of spaces gives its last character back only before a non-space); "other" c: "x", " ", " c'",
// "s" (the apostrophe joins the punctuation run); a letter or number: "x", " ", " c", "'s".
function codepoints() {
  const parts = [];
  for (let cp = 0; cp < 0x40000; cp++) if (cp < 0xd800 || cp > 0xdfff) parts.push("x  " + String.fromCodePoint(cp) + "'s");
  for (let cp = 0xe0000; cp < 0xe1000; cp++) parts.push("x  " + String.fromCodePoint(cp) + "'s");
  return parts.join("");
}

// Bytes that are not UTF-8, in every context the rules treat differently
const INVALID = [
  "abc\xffdef", "\x80", " \xff\xfe x", "caf\xc3", "\xe2\x82 x", "\xc0\xaf", "\xed\xa0\x80a", "\xf4\x90\x80\x80z",
  "\xf5\xf6\xf7\xf8\xfe\xff", "a\xffb", "1\xff2", "\xff \xff\n\xff", "'\xffs", "\xff's", " \x80\x80\x80abc",
  "x  \xff", "\n\n\xff", "\xc3\xa9\xff\xe4\xb8\xad\xff\xf0\x9f\x98\x80\xff", "\xe0\x80\x80", "\xc2",
  "hello \xe4\xbd world", "\x91\x92\x93\x94 quotes", "\xc2\xa0\xff\xc2\xa0x",
];   // each string's characters are the bytes (latin1): \xc3\xa9 is "é" in UTF-8

// ---- random text ---------------------------------------------------------------------------------

function rng(seed) {
  let s = BigInt(seed) * 0x9e3779b97f4a7c15n + 1n;
  return () => {
    s ^= s << 13n; s &= (1n << 64n) - 1n; s ^= s >> 7n; s ^= s << 17n; s &= (1n << 64n) - 1n;
    return Number(s >> 11n) / 2 ** 53;
  };
}

// Words, numbers, punctuation, white space of every kind, letters and marks of many scripts, emoji,
// contractions, and raw bytes (valid and invalid UTF-8), in random proportions.
function randomText(n, seed) {
  const r = rng(seed);
  const pick = (a) => a[Math.floor(r() * a.length)];
  const pools = [
    ["the", "The", " of", "and", "Hello", "world", "I", "a", "x"], ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'"],
    [" ", "  ", "\n", "\n\n", "\t", "\r\n", "\u00a0", "\u3000", "\u2028", "\u0085", "\u000b"],
    ["0", "12", "345", "٣", "½", "Ⅻ", "²"], ["!", "?", ".", ",", "...", "—", "’", "«", "»", "#", "$", "%", "_"],
    ["é", "ß", "Ж", "ω", "中", "日本", "한", "ก", "ع", "ש", "\u0301", "\u094d", "\u200d"],
    ["😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "🫠"],
  ];
  const out = [];
  let len = 0;
  while (len < n) {
    let piece;
    const u = r();
    if (u < 0.08) piece = Buffer.from([Math.floor(r() * 256)]);
    else if (u < 0.10) piece = Buffer.from(Array.from({ length: 1 + Math.floor(r() * 6) }, () => 0x80 + Math.floor(r() * 128)));
    else piece = Buffer.from(pick(pick(pools)), "utf8");
    out.push(piece);
    len += piece.length;
  }
  return Buffer.concat(out).subarray(0, n);
}

// ---- commands ------------------------------------------------------------------------------------

if (cmd === "shard") {
  const { get_encoding } = need("tiktoken");
  const enc = get_encoding("gpt2");
  const tokens = [];
  for (const f of args.slice(1)) {
    tokens.push(EOT);
    for (const t of referenceTokens(enc, fs.readFileSync(f))) tokens.push(t);
  }
  writeShard(args[0], tokens);
  enc.free();
} else if (cmd === "cases") {
  const dir = args[0];
  let k = 0;
  const write = (name, data) => fs.writeFileSync(path.join(dir, String(++k).padStart(2, "0") + "-" + name + ".txt"), data);
  for (const [name, text] of Object.entries(CASES)) write(name, text);
  write("codepoints", codepoints());
  INVALID.forEach((s, i) => write("invalid" + i, Buffer.from(s, "latin1")));
  for (const seed of [1, 2, 3]) write("random" + seed, randomText(20000, seed));
} else if (cmd === "bench") {
  const text = fs.readFileSync(args[0], "utf8"), mb = Buffer.byteLength(text) / 1e6, seconds = Number(args[1]);
  const time = (f) => { let n = 0; const t0 = process.hrtime.bigint(); let dt;
    do { f(); n++; dt = Number(process.hrtime.bigint() - t0) / 1e9; } while (dt < seconds); return n * mb / dt; };
  const { get_encoding } = need("tiktoken");
  const wasm = get_encoding("gpt2");
  console.log(`tiktoken (npm tiktoken ${need("tiktoken/package.json").version}, WebAssembly): ${time(() => wasm.encode_ordinary(text)).toFixed(2)} MB/s`);
  const { getEncoding } = need("js-tiktoken");
  const js = getEncoding("gpt2");
  console.log(`js-tiktoken (npm js-tiktoken ${need("js-tiktoken/package.json").version}, JavaScript): ${time(() => js.encode(text)).toFixed(2)} MB/s`);
} else {
  console.error("usage: node tests/tokenize_ref.cjs NPM_DIR shard OUT FILE... | cases DIR | bench FILE SECONDS");
  process.exit(2);
}
