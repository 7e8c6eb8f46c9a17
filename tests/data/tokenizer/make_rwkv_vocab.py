#!/usr/bin/env python3
r"""Writes ggml-vocab-rwkv-synthetic.gguf: a small made-up vocabulary in the form of
RWKV's "world" tokenizer as GGUF stores it (tokenizer.ggml.model "rwkv").

  make_rwkv_vocab.py OUT.gguf

Token 0 is "<s>" (control); then every single byte, so that any text encodes; then
multi-byte pieces: words with and without a leading space, pieces that overlap so that
the longest match matters, whitespace runs, multi-byte UTF-8 characters and words, parts
of characters, and texts that need escaping (backslash, quotes, tab, CR, LF); last a few
"[PADn]" unused tokens. Each text is written as the converter writes it: Python's bytes
literal without its quotes (printable ASCII as itself, "\\", "\'", "\t", "\n", "\r",
"\xNN" for other bytes). Architecture rwkv6, with none of its model keys: llama.cpp reads
the vocabulary of such a file without them. Needs the `gguf` Python package.
"""
import sys

from gguf import GGUFWriter, TokenType

WORDS = """the of and to in is that for it as was with be by on not he this are or his
from at which but have an they you were her she there their one all we can has been if
more when will would who so no Hello hello world World tokenizer token tokens test
testing ing ed er es ly tion ment ness un re pre Hel lo wor ld llama LLaMA how are you
today quick brown fox jumps over lazy dog I'm I've you'll don't can't 's 't 're 've 'll
'm 'd what this is""".split()

PIECES = [
    # longest match: each a prefix or a part of another
    "a", "ab", "abc", "abcd", "bcd", "bcde", "cde", "xy", "xyz", "xyzw", "zw",
    "1", "12", "123", "1234", "3333", "333", "33", "000", "2024",
    # whitespace and line breaks
    "  ", "   ", "    ", "        ", "\t\t", "\n\n", "\n\n\n", "\r\n", " \n", "\n ", " \t",
    # punctuation
    "...", "!!", "!!!", "??", ", ", ". ", "--", "->", "=>", "==", "()", "[]", "{}", "\"\"", "''",
    "(", ")", "\"hello\"", "'quoted'", "'", "\"", "it's", "he said \"", "'\"",
    # texts that need escaping
    "\\", "\\\\", "\\n", "\\x41", "a\\b", "\t", "\r", "\tindent",
    # multi-byte UTF-8: characters, words, and parts of characters
    "\u00e9", "caf\u00e9", "\u00fc", "\u00fcber", " \u00fcber", "na\u00efve", "\u00f1", "\u00c5",
    "\u4e2d", "\u6587", "\u4e2d\u6587", "\u4e16\u754c", "\u4f60\u597d", "\u4f60\u597d\u4e16\u754c", "\u3002",
    "\u043f\u0440\u0438\u0432\u0435\u0442", " \u043c\u0438\u0440", "\u0645\u0631\u062d\u0628\u0627",
    "\U0001f600", "\U0001f999", " \U0001f999", "\u2581", "\u2581\u2581", "\u00a0",
    "\u0928\u092e\u0938\u094d\u0924\u0947", "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",
    b"\xe4\xb8", b"\xf0\x9f", b"\x98\x80", b"\xe2\x96", b"\x80\x80",
    # an exact control token's text, and what could look like one
    "<s>x", "</s>", "<|endoftext", "[PAD]",
]


def escaped(piece):
    """The converter's form: a Python bytes literal without its quotes."""
    return repr(piece)[2:-1]


def main():
    out = sys.argv[1]
    pieces = [bytes([b]) for b in range(256)]
    for w in WORDS:
        pieces += [w.encode(), b" " + w.encode()]
    pieces += [p if isinstance(p, bytes) else p.encode() for p in PIECES]
    seen, unique = set(), []
    for p in pieces:
        if p not in seen:
            seen.add(p)
            unique.append(p)

    tokens = ["<s>"] + [escaped(p) for p in unique]
    types = [TokenType.CONTROL] + [TokenType.NORMAL] * len(unique)
    for i in range(len(tokens), len(tokens) + 4):
        tokens.append(f"[PAD{i}]")
        types.append(TokenType.UNUSED)
    assert len(set(tokens)) == len(tokens)

    writer = GGUFWriter(out, "rwkv6")
    writer.add_name("synthetic RWKV world-style vocabulary")
    writer.add_tokenizer_model("rwkv")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_bos_token_id(0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    print(f"{out}: {len(tokens)} tokens")


if __name__ == "__main__":
    main()
