#!/usr/bin/env python3
"""Writes a smaller copy of a Unigram ("t5") vocabulary file that tokenizes its fixture
inputs alike.

  trim_ugm_vocab.py SOURCE.gguf INPUTS.inp OUT.gguf

The Viterbi search only uses pieces that occur in the normalized input (the charsmap's
rewriting, spaces as U+2581, the space prefix), so a normal token whose text occurs in no
normalized input can take no part. Such texts become short unique placeholders: U+0001
and the id in base 64. The charsmap deletes U+0001, so no normalized text contains it and
no placeholder can ever match. A placeholder's score becomes the lowest normal score
(which sets the unknown token's, so it stays the lowest; the file then compresses well).
Ids, other scores, types, other token kinds and the charsmap stay as they are. Needs the
`gguf` Python package.
"""
import struct
import sys

from gguf import GGUFReader, GGUFValueType, GGUFWriter

NORMAL = 1
SPACE = "\u2581"
DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+/"


def charsmap_rewriter(blob):
    """The longest-prefix rewriting of a precompiled charsmap (see ugm_tokenizer.cpp)."""
    size = struct.unpack_from("<I", blob)[0]
    nodes = struct.unpack_from(f"<{size // 4}I", blob, 4)
    strings = blob[4 + size:]
    assert b"\x01" not in strings, "a replacement contains U+0001; choose another placeholder mark"

    def base(n):
        return (n >> 10) << ((n >> 6) & 8)

    def rewrite(data, at):
        state, match = base(nodes[0]), None
        for i in range(at, len(data)):
            if data[i] == 0:
                break
            slot = state ^ data[i]
            if nodes[slot] & 0x800000FF != data[i]:
                break
            state = slot ^ base(nodes[slot])
            if (nodes[slot] >> 8) & 1:
                offset = nodes[state] & 0x7FFFFFFF
                match = (i - at + 1, strings[offset:strings.index(b"\0", offset)])
        return match

    assert rewrite(b"\x01", 0) == (1, b""), "the charsmap keeps U+0001; choose another placeholder mark"
    return rewrite


def normalize(text, rewrite, prefix, merge):
    data, out, at = text.encode(), [], 0
    while at < len(data):
        match = rewrite(data, at)
        if match:
            out.append(match[1])
            at += match[0]
        else:
            n = 1 if data[at] < 0x80 else 2 if data[at] < 0xE0 else 3 if data[at] < 0xF0 else 4
            out.append(data[at:at + n])
            at += n
    result, in_word, prefixed = "", False, False
    for c in b"".join(out).decode("utf-8", "replace"):
        if c == " ":
            in_word = False
            result += "" if merge else SPACE
            continue
        if not in_word:
            in_word = True
            if (prefix and not prefixed) or merge:
                result += SPACE
                prefixed = True
        result += c
    return result


def main():
    source, inputs_path, out = sys.argv[1:4]
    raw = open(inputs_path, encoding="utf-8", newline="").read()
    inputs = [t for t in raw.split("\n__ggml_vocab_test__\n") if t]

    fields = GGUFReader(source).fields
    tokens = fields["tokenizer.ggml.tokens"].contents()
    types = fields["tokenizer.ggml.token_type"].contents()
    rewrite = charsmap_rewriter(bytes(fields["tokenizer.ggml.precompiled_charsmap"].contents()))
    flag = lambda key: fields[key].contents() if key in fields else False
    prefix, merge = flag("tokenizer.ggml.add_space_prefix"), flag("tokenizer.ggml.remove_extra_whitespaces")
    normalized = "\0".join(normalize(t, rewrite, prefix, merge) for t in inputs)
    # Text that user-defined tokens leave unnormalized: the raw inputs count too.
    normalized += "\0" + "\0".join(SPACE + t.replace(" ", SPACE) for t in inputs)

    def placeholder(i):
        return "\u0001" + DIGITS[i >> 12 & 63] + DIGITS[i >> 6 & 63] + DIGITS[i & 63]

    assert len(tokens) <= 64 ** 3
    kept = [t if ty != NORMAL or t in normalized else placeholder(i) for i, (t, ty) in enumerate(zip(tokens, types))]

    scores = fields["tokenizer.ggml.scores"].contents()
    lowest = min(s for s, ty in zip(scores, types) if ty == NORMAL)
    scores = [s if k == t else lowest for s, k, t in zip(scores, kept, tokens)]

    writer = GGUFWriter(out, fields["general.architecture"].contents())
    for key, field in fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        if key == "tokenizer.ggml.tokens":
            writer.add_array(key, kept)
        elif key == "tokenizer.ggml.scores":
            writer.add_key_value(key, scores, GGUFValueType.ARRAY, GGUFValueType.FLOAT32)
        elif field.types[0] == GGUFValueType.ARRAY:
            writer.add_key_value(key, field.contents(), field.types[0], field.types[-1])
        else:
            writer.add_key_value(key, field.contents(), field.types[0])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    print(f"{out}: {sum(1 for t, k in zip(tokens, kept) if t == k)} of {len(tokens)} token texts kept")


if __name__ == "__main__":
    main()
