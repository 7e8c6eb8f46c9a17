// Code point helpers shared by the tokenizers: UTF-8 conversion, the character classes
// the pre-tokenizer patterns test, and GPT-2's byte <-> printable-character mapping.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace arbor::tok {

// Per-code-point class bits (Unicode general categories and properties via ICU): every
// class a pre-tokenizer pattern names is one bit, so a class test is one AND.
using CpFlags = uint16_t;
enum CpFlag : CpFlags {
    kLetter = 1 << 0,       // L*
    kNumber = 1 << 1,       // N*
    kPunctuation = 1 << 2,  // P*
    kWhitespace = 1 << 3,   // White_Space
    kMark = 1 << 4,         // M*
    kSymbol = 1 << 5,       // S*
    kUpper = 1 << 6,        // Lu
    kLower = 1 << 7,        // Ll
    kTitle = 1 << 8,        // Lt
    kModifier = 1 << 9,     // Lm
    kOtherLetter = 1 << 10, // Lo
    kDigit = 1 << 11,       // Nd (\d)
    kHan = 1 << 12,         // Script=Han
    kWord = 1 << 13,        // \w and \b: Alphabetic, M*, Nd, Pc, Join_Control (UTS #18)
};

CpFlags cp_flags(char32_t cp);

// Decodes UTF-8 leniently: each byte that does not start a well-formed sequence becomes
// U+FFFD (as the reference tokenizer does), so the result always has one entry per
// character or bad byte.
std::u32string decode_utf8(std::string_view text);
void append_utf8(std::string& out, char32_t cp);

// Length in bytes of the sequence a lead byte announces (1 for stray continuation bytes).
inline size_t utf8_len(unsigned char lead) {
    static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLen[lead >> 4];
}

// Splits `bytes` into the longest prefix that can be emitted as well-formed UTF-8 and a
// tail that may still complete: returns the emitted text (ill-formed subsequences are
// replaced by one U+FFFD each) and sets `consumed` to the number of bytes used. With
// `final`, an incomplete tail is replaced too and everything is consumed.
std::string sanitize_utf8(std::string_view bytes, bool final, size_t& consumed);

// GPT-2 byte-level alphabet: each byte value has a printable stand-in character.
class ByteAlphabet {
public:
    ByteAlphabet();
    // UTF-8 of the stand-in for `byte`.
    const std::string& encode(uint8_t byte) const { return to_char_[byte]; }
    // The byte a stand-in code point represents, or -1 when it is none.
    int decode(char32_t cp) const { return cp < from_cp_.size() ? from_cp_[cp] : -1; }

private:
    std::array<std::string, 256> to_char_;
    std::vector<int16_t> from_cp_;
};

const ByteAlphabet& byte_alphabet();

} // namespace arbor::tok
