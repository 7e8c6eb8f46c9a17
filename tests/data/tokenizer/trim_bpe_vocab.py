#!/usr/bin/env python3
"""Writes a smaller copy of a BPE vocabulary file that tokenizes its fixture inputs alike.

  trim_bpe_vocab.py SOURCE.gguf INPUTS.inp OUT.gguf [--escape-spaces]

A merge can only apply to a word of an input when the text it produces occurs in that
input (byte-level vocabularies, tokenizer.ggml.model "gpt2": in its bytes spelled with
GPT-2's stand-in characters), and a token can only be produced when its text does: merges whose result occurs in
no input are dropped (the rest keep their order, which is all BPE ranks), and the text of
normal tokens that occur in no input is emptied (ids keep their places; empty texts are
in no vocabulary index). Other token kinds (control, user-defined, byte, unknown) are kept
whole. --escape-spaces compares with the inputs' spaces written as U+2581 (SentencePiece-
style BPE). Needs the `gguf` Python package.
"""
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter

NORMAL = 1


def byte_stand_ins():
    """GPT-2's printable stand-in character for each byte value."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def main():
    source, inputs_path, out = sys.argv[1:4]
    escape = "--escape-spaces" in sys.argv[4:]
    raw = open(inputs_path, encoding="utf-8", newline="").read()
    inputs = [t for t in raw.split("\n__ggml_vocab_test__\n") if t]
    if escape:
        inputs = [t.replace(" ", "\u2581") for t in inputs]
    reader = GGUFReader(source)
    fields = reader.fields
    if fields["tokenizer.ggml.model"].contents() == "gpt2" and not escape:
        stand_in = byte_stand_ins()
        inputs = ["".join(stand_in[b] for b in t.encode("utf-8")) for t in inputs]
    text = "\u0000".join(inputs)  # no token or merge spans two inputs

    arch = fields["general.architecture"].contents()
    writer = GGUFWriter(out, arch)
    tokens = fields["tokenizer.ggml.tokens"].contents()
    types = fields["tokenizer.ggml.token_type"].contents()
    kept_tokens = [t if ty != NORMAL or t in text else "" for t, ty in zip(tokens, types)]
    merges = [m for m in fields["tokenizer.ggml.merges"].contents() if m.replace(" ", "", 1) in text]
    for key, field in fields.items():
        if key.startswith("GGUF.") or key in ("general.architecture", "tokenizer.chat_template"):
            continue
        if key == "tokenizer.ggml.tokens":
            writer.add_array(key, kept_tokens)
        elif key == "tokenizer.ggml.merges":
            writer.add_array(key, merges)
        elif key == "tokenizer.ggml.token_type":
            writer.add_key_value(key, [int(t) for t in types], GGUFValueType.ARRAY, GGUFValueType.INT32)
        elif key == "tokenizer.ggml.scores":
            continue  # BPE does not use them
        else:
            value_type = field.types[0]
            if value_type == GGUFValueType.ARRAY:
                writer.add_key_value(key, field.contents(), value_type, field.types[-1])
            else:
                writer.add_key_value(key, field.contents(), value_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    print(f"{out}: {sum(1 for t in kept_tokens if t)} of {len(tokens)} token texts, "
          f"{len(merges)} of {len(fields['tokenizer.ggml.merges'].contents())} merges")


if __name__ == "__main__":
    main()
