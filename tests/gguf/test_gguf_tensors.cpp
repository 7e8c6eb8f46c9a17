// Broken files: the tensor table and the data section; truncation and random corruption.
#include "test_gguf.h"

#include <random>

using namespace arbor;
using namespace arbor::test;

void TestGguf::unknownTensorType() {
    GgufWriter w = base_writer();
    w.add_tensor({"blk.0.attn_q.weight", 16, {256}, pattern_bytes(66, 3)});  // IQ2_XXS
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'blk.0.attn_q.weight'", "type id 16");
    GgufWriter w2 = base_writer();
    w2.add_tensor({"odd", 1000, {4}, pattern_bytes(16, 3)});
    ARBOR_VERIFY_OPEN_ERROR(write(w2), "'odd'", "type id 1000");
}

void TestGguf::nonWeightTensorType() {
    GgufWriter w = base_writer();
    w.add_tensor({"act", 15, {256}, pattern_bytes(292, 3)});  // Q8_K
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'act'", "Q8_K", "id 15");
    GgufWriter w2 = base_writer();
    w2.add_tensor({"act1", 9, {32}, pattern_bytes(36, 3)});  // Q8_1
    ARBOR_VERIFY_OPEN_ERROR(write(w2), "'act1'", "Q8_1", "id 9");
}

void TestGguf::dimsCount_data() {
    QTest::addColumn<int>("n_dims");
    QTest::newRow("zero") << 0;
    QTest::newRow("five") << 5;
}

void TestGguf::dimsCount() {
    QFETCH(int, n_dims);
    GgufWriter w = base_writer();
    w.add_tensor({"bad.dims", 0, std::vector<uint64_t>(size_t(n_dims), 1), pattern_bytes(4, 3)});
    const std::string words = "dimension count " + std::to_string(n_dims);
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'bad.dims'", words.c_str());
}

void TestGguf::zeroDim() {
    GgufWriter w = base_writer();
    w.add_tensor({"empty.dim", 0, {32, 0}, {}});
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'empty.dim'", "invalid dimension 0");
}

void TestGguf::dimNotMultipleOfBlock() {
    GgufWriter w = base_writer();
    w.add_tensor({"ragged", 3, {33, 2}, pattern_bytes(80, 3)});  // Q4_1, blocks of 32
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'ragged'", "33", "not a multiple of the block size 32");
}

void TestGguf::elementCountOverflow() {
    GgufWriter w = base_writer();
    w.add_tensor({"huge", 0, {1ull << 32, 1ull << 32}, {}, std::nullopt, false});
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'huge'", "element count overflows");
}

void TestGguf::byteSizeOverflow() {
    // 2^62 elements fit in int64, their 2^64 bytes of F32 do not.
    GgufWriter w = base_writer();
    w.add_tensor({"big", 0, {1ull << 31, 1ull << 31}, {}, std::nullopt, false});
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'big'", "byte size overflows");
}

void TestGguf::tensorDataBeyondEnd() {
    GgufWriter w = base_writer();
    w.add_tensor({"far", 0, {8}, pattern_bytes(32, 3), 4096, false});
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'far'", "beyond the end of the file");
}

void TestGguf::tensorOffsetOverflow() {
    // offset + size would wrap around 2^64 if added without care.
    GgufWriter w = base_writer();
    w.add_tensor({"wrap", 0, {8}, pattern_bytes(32, 3), ~uint64_t(31), false});
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'wrap'", "beyond the end of the file");
}

void TestGguf::overlappingTensors() {
    GgufWriter w;
    w.add_tensor({"first", 0, {16}, pattern_bytes(64, 1), 0});
    w.add_tensor({"second", 0, {16}, pattern_bytes(64, 2), 32});
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'first'", "'second'", "overlap");
}

void TestGguf::duplicateTensorNames() {
    GgufWriter w = base_writer();
    w.add_tensor({"t0", 0, {8}, pattern_bytes(32, 3)});
    ARBOR_VERIFY_OPEN_ERROR(write(w), "duplicate tensor name 't0'");
}

void TestGguf::misalignedOffset() {
    GgufWriter w;
    w.add_tensor({"t0", 0, {16}, pattern_bytes(64, 1), 0});
    w.add_tensor({"t1", 0, {8}, pattern_bytes(32, 2), 80});
    ARBOR_VERIFY_OPEN_ERROR(write(w), "'t1'", "offset 80", "not a multiple of the alignment 32");
}

namespace {

GgufWriter rich_writer() {
    GgufWriter w = base_writer();
    w.add("general.alignment", gv::u32(32));
    w.add("names", gv::arr(GgufType::Array, {gv::arr(GgufType::String, {gv::str("ab"), gv::str("")}),
                                             gv::arr(GgufType::Float32, {gv::f32(1.0f)})}));
    w.add("flag", gv::boolean(true));
    w.add("scale", gv::f64(0.5));
    w.add_tensor({"q", 8, {32, 2}, pattern_bytes(68, 9)});
    return w;
}

} // namespace

void TestGguf::truncatedEverywhere() {
    const auto bytes = rich_writer().bytes();
    QVERIFY(arbor::test::open_error(write(bytes)) == "<opened without error>");
    const auto path = std::filesystem::path(dir_.path().toStdString()) / "cut.gguf";
    int failures = 0;
    std::string first_failure;
    for (size_t n = 0; n < bytes.size(); ++n) {
        write_file(path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + ptrdiff_t(n)));
        const std::string msg = arbor::test::open_error(path);
        const bool ok = n == 0 ? msg.find("empty") != std::string::npos
                               : msg.find("truncated") != std::string::npos;
        if (!ok && failures++ == 0)
            first_failure = "cut at " + std::to_string(n) + ": " + msg;
    }
    QVERIFY2(failures == 0, first_failure.c_str());
}

void TestGguf::randomCorruption() {
    // Any damage must give either a valid file or arbor::Error; never a crash.
    const auto good = rich_writer().bytes();
    const auto path = std::filesystem::path(dir_.path().toStdString()) / "fuzz.gguf";
    std::mt19937 rng(12345);
    int errors = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        auto bytes = good;
        const int flips = 1 + int(rng() % 4);
        for (int k = 0; k < flips; ++k) {
            const size_t at = rng() % bytes.size();
            bytes[at] = (rng() % 3 == 0) ? uint8_t(0xff) : uint8_t(rng());
        }
        write_file(path, bytes);
        const std::string msg = arbor::test::open_error(path);
        QVERIFY2(msg.rfind("<threw", 0) != 0, msg.c_str());
        if (msg != "<opened without error>") ++errors;
    }
    QVERIFY(errors > 0);  // the damage was noticed at least sometimes
}
