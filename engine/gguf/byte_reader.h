// Bounds-checked little-endian cursor over a byte range (the mapped GGUF file).
// Every read checks the remaining length first and throws arbor::Error naming the
// offset, so a truncated or hostile file can never cause a read past the end.
#pragma once

#include "arbor/error.h"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace arbor::gguf_detail {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader assumes a little-endian host");

class ByteReader {
public:
    ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

    size_t pos() const { return pos_; }
    size_t size() const { return size_; }
    size_t remaining() const { return size_ - pos_; }

    uint8_t u8() { return scalar<uint8_t>(); }
    uint16_t u16() { return scalar<uint16_t>(); }
    uint32_t u32() { return scalar<uint32_t>(); }
    uint64_t u64() { return scalar<uint64_t>(); }
    int8_t i8() { return scalar<int8_t>(); }
    int16_t i16() { return scalar<int16_t>(); }
    int32_t i32() { return scalar<int32_t>(); }
    int64_t i64() { return scalar<int64_t>(); }
    float f32() { return scalar<float>(); }
    double f64() { return scalar<double>(); }

    // A GGUF string: uint64 length, then that many bytes (not NUL-terminated).
    std::string_view string_view() {
        const uint64_t len = u64();
        if (len > remaining())
            throw Error("string length " + std::to_string(len) + " at offset " +
                        std::to_string(pos_ - 8) + " exceeds the remaining " +
                        std::to_string(remaining()) + " bytes (file truncated or corrupt)");
        std::string_view s(reinterpret_cast<const char*>(data_ + pos_), size_t(len));
        pos_ += size_t(len);
        return s;
    }
    std::string string() { return std::string(string_view()); }

    // Throws unless `count` items of at least `min_item_bytes` each could still fit.
    void require_items(uint64_t count, size_t min_item_bytes, std::string_view what) const {
        if (count > remaining() / min_item_bytes)
            throw Error(std::string(what) + " " + std::to_string(count) +
                        " is more than the remaining " + std::to_string(remaining()) +
                        " bytes could hold (file truncated or corrupt)");
    }

private:
    template <typename T>
    T scalar() {
        if (remaining() < sizeof(T))
            throw Error("file truncated: need " + std::to_string(sizeof(T)) +
                        " bytes at offset " + std::to_string(pos_) + ", only " +
                        std::to_string(remaining()) + " left");
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

} // namespace arbor::gguf_detail
