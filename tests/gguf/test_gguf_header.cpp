// Broken files: the path itself, the header and the metadata section.
#include "test_gguf.h"

using namespace arbor;
using namespace arbor::test;

void TestGguf::emptyFile() {
    ARBOR_VERIFY_OPEN_ERROR(write(std::vector<uint8_t>{}), "empty");
}

void TestGguf::missingPath() {
    const auto path = std::filesystem::path(dir_.path().toStdString()) / "no-such-file.gguf";
    ARBOR_VERIFY_OPEN_ERROR(path, "cannot open", "no-such-file.gguf", "No such file");
}

void TestGguf::directoryPath() {
    ARBOR_VERIFY_OPEN_ERROR(std::filesystem::path(dir_.path().toStdString()), "directory");
}

void TestGguf::wrongMagic() {
    GgufWriter w = base_writer();
    w.magic = 0x4c4d4747;  // "GGML"
    ARBOR_VERIFY_OPEN_ERROR(write(w), "not a GGUF file", "magic");
}

void TestGguf::version1() {
    GgufWriter w = base_writer();
    w.version = 1;
    ARBOR_VERIFY_OPEN_ERROR(write(w), "unsupported GGUF version 1");
}

void TestGguf::unsupportedVersion() {
    GgufWriter w = base_writer();
    w.version = 4;
    ARBOR_VERIFY_OPEN_ERROR(write(w), "unsupported GGUF version 4");
}

void TestGguf::bigEndian() {
    GgufWriter w = base_writer();
    w.version = 0x03000000;  // version 3 written big-endian
    ARBOR_VERIFY_OPEN_ERROR(write(w), "big-endian");
}

void TestGguf::absurdTensorCount() {
    GgufWriter w = base_writer();
    w.tensor_count = 1ull << 40;
    ARBOR_VERIFY_OPEN_ERROR(write(w), "tensor count 1099511627776", "remaining");
}

void TestGguf::absurdKvCount() {
    GgufWriter w = base_writer();
    w.kv_count = ~0ull;
    ARBOR_VERIFY_OPEN_ERROR(write(w), "metadata key count 18446744073709551615", "remaining");
}

void TestGguf::absurdArrayLength() {
    GgufWriter w = base_writer();
    w.add_raw("bad.array", 9, Bytes{}.u32(8).u64(1ull << 50).str("only one").buf);
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'bad.array'", "array length 1125899906842624");
}

void TestGguf::absurdStringLength() {
    GgufWriter w = base_writer();
    w.add_raw("bad.string", 8, Bytes{}.u64(1ull << 40).buf);
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'bad.string'", "string length 1099511627776");
}

void TestGguf::absurdKeyLength() {
    GgufWriter w = base_writer();
    w.add_raw_entry(Bytes{}.u64(~0ull - 3).u32(4).u32(0).buf);
    ARBOR_VERIFY_OPEN_ERROR(write(w), "metadata entry #1", "string length 18446744073709551612");
}

void TestGguf::invalidValueType() {
    GgufWriter w = base_writer();
    w.add_raw("bad.type", 13, Bytes{}.u32(0).buf);
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'bad.type'", "invalid value type id 13");
}

void TestGguf::invalidArrayElementType() {
    GgufWriter w = base_writer();
    w.add_raw("bad.elem", 9, Bytes{}.u32(99).u64(1).u8(0).buf);
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'bad.elem'", "invalid value type id 99");
}

void TestGguf::nestingTooDeep() {
    // Nine array levels: one more than the reader accepts (see nestingAtLimit).
    GgufValue v = gv::arr(GgufType::String, {gv::str("leaf")});
    for (int level = 1; level < 9; ++level) v = gv::arr(GgufType::Array, {v});
    GgufWriter w = base_writer();
    w.add("too.deep", v);
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'too.deep'", "nested too deeply");
}

void TestGguf::invalidBool() {
    GgufWriter w = base_writer();
    w.add_raw("bad.bool", 7, {2});
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'bad.bool'", "invalid bool value 2");
}

void TestGguf::duplicateMetadataKeys() {
    GgufWriter w = base_writer();
    w.add("dup.key", gv::u32(1));
    w.add("other.key", gv::u32(2));
    w.add("dup.key", gv::str("again"));
    ARBOR_VERIFY_OPEN_ERROR(write(w), "duplicate metadata key 'dup.key'");
}

void TestGguf::emptyKey() {
    GgufWriter w = base_writer();
    w.add("", gv::u32(1));
    ARBOR_VERIFY_OPEN_ERROR(write(w), "metadata entry #1", "empty key");
}

void TestGguf::alignmentZero() {
    GgufWriter w = base_writer();
    w.add("general.alignment", gv::u32(0));
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'general.alignment'", "power of two", "got 0");
}

void TestGguf::alignmentNotPowerOfTwo() {
    GgufWriter w = base_writer();
    w.alignment = 48;
    w.add("general.alignment", gv::u32(48));
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'general.alignment'", "power of two", "got 48");
}

void TestGguf::alignmentWrongType() {
    GgufWriter w = base_writer();
    w.add("general.alignment", gv::str("32"));
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'general.alignment'", "unsigned integer", "string");
}
