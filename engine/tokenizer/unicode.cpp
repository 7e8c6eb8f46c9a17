#include "unicode.h"

#include <unicode/uchar.h>
#include <unicode/uscript.h>

#include <memory>

namespace arbor::tok {

namespace {

CpFlags compute_flags(char32_t cp) {
    const auto c = static_cast<UChar32>(cp);
    const uint32_t gc = U_GET_GC_MASK(c);
    CpFlags f = 0;
    if (gc & U_GC_L_MASK) f |= kLetter;
    if (gc & U_GC_N_MASK) f |= kNumber;
    if (gc & U_GC_P_MASK) f |= kPunctuation;
    if (gc & U_GC_M_MASK) f |= kMark;
    if (gc & U_GC_S_MASK) f |= kSymbol;
    if (gc & U_GC_LU_MASK) f |= kUpper;
    if (gc & U_GC_LL_MASK) f |= kLower;
    if (gc & U_GC_LT_MASK) f |= kTitle;
    if (gc & U_GC_LM_MASK) f |= kModifier;
    if (gc & U_GC_LO_MASK) f |= kOtherLetter;
    if (gc & U_GC_ND_MASK) f |= kDigit;
    if (u_isUWhiteSpace(c)) f |= kWhitespace;
    UErrorCode status = U_ZERO_ERROR;
    if (uscript_getScript(c, &status) == USCRIPT_HAN) f |= kHan;
    if (u_isUAlphabetic(c) || (gc & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) ||
        u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL))
        f |= kWord;
    return f;
}

// The Basic Multilingual Plane is looked up in a table built once; other planes ask ICU.
struct BmpFlags {
    std::unique_ptr<CpFlags[]> table{new CpFlags[0x10000]};
    BmpFlags() {
        for (char32_t cp = 0; cp < 0x10000; ++cp) table[cp] = compute_flags(cp);
    }
};

} // namespace

CpFlags cp_flags(char32_t cp) {
    static const BmpFlags bmp;
    if (cp < 0x10000) return bmp.table[cp];
    return cp <= 0x10FFFF ? compute_flags(cp) : 0;
}

std::u32string decode_utf8(std::string_view text) {
    std::u32string out;
    out.reserve(text.size());
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
        const unsigned char b = s[i];
        if (b < 0x80) {
            out.push_back(b);
            ++i;
            continue;
        }
        // Same acceptance as the reference: lead byte class and continuation bits only.
        size_t len = 0;
        char32_t cp = 0;
        if ((b & 0xE0) == 0xC0) { len = 2; cp = b & 0x1F; }
        else if ((b & 0xF0) == 0xE0) { len = 3; cp = b & 0x0F; }
        else if ((b & 0xF8) == 0xF0) { len = 4; cp = b & 0x07; }
        bool ok = len != 0 && i + len <= n;
        for (size_t k = 1; ok && k < len; ++k) {
            if ((s[i + k] & 0xC0) != 0x80) ok = false;
            else cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (!ok) {
            out.push_back(0xFFFD);
            ++i;
            continue;
        }
        out.push_back(cp);
        i += len;
    }
    return out;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp <= 0x10FFFF) {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        append_utf8(out, 0xFFFD);
    }
}

namespace {

// Number of bytes of a well-formed sequence starting at s[0..n) (Unicode table 3-7):
// >0 complete, 0 a valid but incomplete prefix, <0 ill-formed (-k: k bytes to replace).
int scan_sequence(const unsigned char* s, size_t n) {
    const unsigned char b = s[0];
    if (b < 0x80) return 1;
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b >= 0xC2 && b <= 0xDF) len = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        len = 3;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
    } else {
        return -1;
    }
    for (size_t k = 1; k < len; ++k) {
        if (k >= n) return 0;
        const unsigned char c = s[k];
        const bool ok = k == 1 ? (c >= lo && c <= hi) : (c & 0xC0) == 0x80;
        if (!ok) return -static_cast<int>(k);
    }
    return static_cast<int>(len);
}

} // namespace

std::string sanitize_utf8(std::string_view bytes, bool final, size_t& consumed) {
    std::string out;
    out.reserve(bytes.size());
    const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
    size_t i = 0;
    while (i < bytes.size()) {
        const int r = scan_sequence(s + i, bytes.size() - i);
        if (r > 0) {
            out.append(bytes.data() + i, static_cast<size_t>(r));
            i += static_cast<size_t>(r);
        } else if (r < 0) {
            append_utf8(out, 0xFFFD);
            i += static_cast<size_t>(-r);
        } else if (final) {
            append_utf8(out, 0xFFFD);
            i = bytes.size();
        } else {
            break;
        }
    }
    consumed = i;
    return out;
}

ByteAlphabet::ByteAlphabet() : from_cp_(512, -1) {
    // Printable Latin-1 bytes stand for themselves; the rest map to U+0100 upwards in order.
    auto printable = [](int b) {
        return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
        const char32_t cp = printable(b) ? static_cast<char32_t>(b) : next++;
        append_utf8(to_char_[b], cp);
        from_cp_[cp] = static_cast<int16_t>(b);
    }
}

const ByteAlphabet& byte_alphabet() {
    static const ByteAlphabet alphabet;
    return alphabet;
}

} // namespace arbor::tok
