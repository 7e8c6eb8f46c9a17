// The vocabulary of synthetic models: byte-level BPE (tokenizer.ggml.model "gpt2") with
// the 256 byte tokens, lowercase words after a space up to the asked size, and the ChatML
// control tokens with a ChatML chat template, as SmolLM2 has.
#pragma once

#include "../gguf/gguf_test_writer.h"

namespace arbor::synth {

// Smallest vocabulary: the byte tokens and the three control tokens.
inline constexpr int kMinVocab = 256 + 3;
// Largest vocabulary allowed (every word of up to four letters makes 475,254 merges).
inline constexpr int kMaxVocab = 262144;

// Adds the tokenizer.* metadata for n_vocab tokens (kMinVocab..kMaxVocab) to `w`:
//   ids 0-255          the bytes, in GPT-2's printable spelling, in byte order;
//   ids 256..n_vocab-4 merges in rank order: " a".." z", " aa".." zz", " aaa".." zzz",
//                      and so on, each the word without its last letter merged with that
//                      letter, so that BPE builds a word after a space left to right and
//                      " the" is one token (text without a leading space stays in bytes);
//   the last three     <|endoftext|> (BOS, not added), <|im_start|>, <|im_end|> (EOS).
void add_vocabulary(test::GgufWriter& w, int n_vocab);

} // namespace arbor::synth
