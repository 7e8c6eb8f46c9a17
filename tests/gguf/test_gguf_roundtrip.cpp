// Valid generated files read back exactly: every value type, nested arrays, tensors.
#include "test_gguf.h"

#include <cstring>

using namespace arbor;
using namespace arbor::test;
using T = GgufType;

namespace {

std::vector<std::pair<std::string, GgufValue>> all_values() {
    using namespace gv;
    return {
        {"general.architecture", str("llama")},
        {"t.u8", u8(200)},
        {"t.i8", i8(-100)},
        {"t.u16", u16(60000)},
        {"t.i16", i16(-30000)},
        {"t.u32", u32(4000000000u)},
        {"t.i32", i32(-2000000000)},
        {"t.u64", u64(18000000000000000000ull)},
        {"t.i64", i64(-9000000000000000000ll)},
        {"t.f32", f32(1.5f)},
        {"t.f64", f64(3.141592653589793)},
        {"t.bool_true", boolean(true)},
        {"t.bool_false", boolean(false)},
        {"t.str", str("h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93")},
        {"t.str_nul", str(std::string("a\0b", 3))},
        {"t.str_empty", str("")},
        {"t.arr.u8", arr(T::Uint8, {u8(1), u8(2), u8(255)})},
        {"t.arr.i8", arr(T::Int8, {i8(-128), i8(127)})},
        {"t.arr.u16", arr(T::Uint16, {u16(65535), u16(0)})},
        {"t.arr.i16", arr(T::Int16, {i16(-1), i16(2)})},
        {"t.arr.u32", arr(T::Uint32, {u32(7), u32(4294967295u)})},
        {"t.arr.i32", arr(T::Int32, {i32(-1), i32(0), i32(7)})},
        {"t.arr.u64", arr(T::Uint64, {u64(1ull << 63)})},
        {"t.arr.i64", arr(T::Int64, {i64(-5), i64(1ll << 62)})},
        {"t.arr.f32", arr(T::Float32, {f32(0.25f), f32(-2.0f)})},
        {"t.arr.f64", arr(T::Float64, {f64(1e300), f64(-0.0)})},
        {"t.arr.bool", arr(T::Bool, {boolean(true), boolean(false)})},
        {"t.arr.str", arr(T::String, {str("a"), str(""), str("ccc")})},
        {"t.arr.empty", arr(T::Uint64, {})},
        {"t.arr.nested", arr(T::Array, {arr(T::String, {str("x"), str("y")}),
                                        arr(T::String, {str("z")}), arr(T::String, {})})},
        {"t.arr.nested3", arr(T::Array, {arr(T::Array, {arr(T::Int16, {i16(-7), i16(8)})}),
                                         arr(T::Array, {})})},
        {"t.arr.mixed_inner", arr(T::Array, {arr(T::Uint8, {u8(9)}), arr(T::String, {str("s")})})},
        {"t.after_arrays", u32(42)},
    };
}

struct ExpectedTensor {
    TestTensor t;
    int64_t n_elements;
    size_t n_bytes;
    int64_t rows;
    DType type;
};

// Sizes worked out by hand from the block layouts (e.g. Q8_0: 34 bytes per 32 values).
std::vector<ExpectedTensor> all_tensors() {
    return {
        {{"tok.weight", 0, {4, 3}, pattern_bytes(48, 1)}, 12, 48, 3, DType::F32},
        {{"q8.weight", 8, {64, 2}, pattern_bytes(136, 2)}, 128, 136, 2, DType::Q8_0},
        {{"q4.weight", 3, {32}, pattern_bytes(20, 3)}, 32, 20, 1, DType::Q4_1},
        {{"f16.weight", 1, {8, 2, 2}, pattern_bytes(64, 4)}, 32, 64, 4, DType::F16},
        {{"q6k.weight", 14, {256, 1}, pattern_bytes(210, 5)}, 256, 210, 1, DType::Q6_K},
        {{"bf16.weight", 30, {2, 1, 1, 3}, pattern_bytes(12, 6)}, 6, 12, 3, DType::BF16},
    };
}

GgufWriter full_writer(uint32_t version) {
    GgufWriter w;
    w.version = version;
    for (auto& [k, v] : all_values()) w.add(k, v);
    for (auto& e : all_tensors()) w.add_tensor(e.t);
    return w;
}

} // namespace

void TestGguf::roundTrip_data() {
    QTest::addColumn<uint32_t>("version");
    QTest::newRow("v2") << uint32_t(2);
    QTest::newRow("v3") << uint32_t(3);
}

void TestGguf::roundTrip() {
    QFETCH(uint32_t, version);
    const GgufWriter w = full_writer(version);
    const auto f = GgufFile::open(write(w));
    QCOMPARE(f->version(), version);
    QCOMPARE(f->alignment(), size_t(32));

    const auto values = all_values();
    QCOMPARE(f->metadata().size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
        const auto& [key, value] = f->metadata()[i];
        QCOMPARE(key, values[i].first);  // file order is kept
        QVERIFY2(same_value(value, values[i].second), key.c_str());
        QCOMPARE(f->find(key), &value);
    }
    QVERIFY(f->find("t.absent") == nullptr);

    const auto expected = all_tensors();
    const auto offsets = w.tensor_offsets();
    QCOMPARE(f->tensors().size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        const GgufTensor& t = f->tensors()[i];
        const ExpectedTensor& e = expected[i];
        QCOMPARE(t.name, e.t.name);
        QCOMPARE(f->find_tensor(e.t.name), &t);
        QVERIFY(t.type == e.type);
        QCOMPARE(t.dims.size(), e.t.dims.size());
        for (size_t d = 0; d < t.dims.size(); ++d) QCOMPARE(uint64_t(t.dims[d]), e.t.dims[d]);
        QCOMPARE(t.n_elements, e.n_elements);
        QCOMPARE(t.n_bytes, e.n_bytes);
        QCOMPARE(t.rows(), e.rows);
        QCOMPARE(uint64_t(t.cols()), e.t.dims[0]);
        QCOMPARE(t.offset, offsets[i]);
        QCOMPARE(t.offset % 32, uint64_t(0));
        QVERIFY(t.data != nullptr);
        QCOMPARE(reinterpret_cast<uintptr_t>(t.data) % 32, uintptr_t(0));
        QVERIFY2(std::memcmp(t.data, e.t.data.data(), e.n_bytes) == 0, t.name.c_str());
    }
    QVERIFY(f->find_tensor("absent") == nullptr);
}

void TestGguf::valueAccessors() {
    const auto f = GgufFile::open(write(full_writer(3)));
    const auto v = [&](const char* key) -> const GgufValue& {
        const GgufValue* p = f->find(key);
        if (!p) throw std::runtime_error(std::string("missing ") + key);
        return *p;
    };
    QCOMPARE(v("t.u8").as_uint(), std::optional<uint64_t>(200));
    QCOMPARE(v("t.u8").as_int(), std::optional<int64_t>(200));
    QCOMPARE(v("t.u8").as_float(), std::optional<double>(200.0));
    QVERIFY(!v("t.u8").as_bool());
    QVERIFY(v("t.u8").as_string() == nullptr);
    QCOMPARE(v("t.i8").as_int(), std::optional<int64_t>(-100));
    QVERIFY(!v("t.i8").as_uint());  // negative does not fit
    QVERIFY(!v("t.u64").as_int());  // above INT64_MAX
    QCOMPARE(v("t.u64").as_uint(), std::optional<uint64_t>(18000000000000000000ull));
    QCOMPARE(v("t.i64").as_int(), std::optional<int64_t>(-9000000000000000000ll));
    QCOMPARE(v("t.f32").as_float(), std::optional<double>(1.5));
    QVERIFY(!v("t.f32").as_uint());
    QVERIFY(!v("t.f32").as_int());
    QCOMPARE(v("t.f64").as_float(), std::optional<double>(3.141592653589793));
    QCOMPARE(v("t.bool_true").as_bool(), std::optional<bool>(true));
    QCOMPARE(v("t.bool_false").as_bool(), std::optional<bool>(false));
    QVERIFY(!v("t.bool_true").as_uint());
    QCOMPARE(*v("t.str").as_string(), std::string("h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93"));
    QCOMPARE(v("t.str_nul").as_string()->size(), size_t(3));
    QVERIFY(v("t.str").as_array() == nullptr);

    const GgufValue nested = v("t.arr.nested");
    QVERIFY(nested.type == GgufType::Array);
    QVERIFY(nested.element_type == GgufType::Array);
    const auto* outer = nested.as_array();
    QVERIFY(outer != nullptr);
    QCOMPARE(outer->size(), size_t(3));
    QVERIFY((*outer)[0].element_type == GgufType::String);
    QCOMPARE((*outer)[0].as_array()->size(), size_t(2));
    QCOMPARE(*(*outer)[0].as_array()->at(1).as_string(), std::string("y"));
    QCOMPARE(*(*outer)[1].as_array()->at(0).as_string(), std::string("z"));
    QVERIFY((*outer)[2].as_array()->empty());
    const auto* deep = v("t.arr.nested3").as_array()->at(0).as_array()->at(0).as_array();
    QCOMPARE(deep->at(0).as_int(), std::optional<int64_t>(-7));
    QCOMPARE(v("t.arr.i32").as_array()->at(0).as_int(), std::optional<int64_t>(-1));
    QCOMPARE(v("t.arr.f32").as_array()->at(0).as_float(), std::optional<double>(0.25));

    QCOMPARE(gguf_type_name(GgufType::Float32), std::string_view("float32"));
    QCOMPARE(gguf_type_name(GgufType::Array), std::string_view("array"));
}

void TestGguf::typedLookups() {
    const auto f = GgufFile::open(write(full_writer(3)));
    QCOMPARE(f->get_string("general.architecture"), std::optional<std::string>("llama"));
    QCOMPARE(f->require_string("general.architecture"), std::string("llama"));
    QVERIFY(!f->get_string("absent.key"));
    QVERIFY(!f->get_uint("absent.key"));
    QVERIFY(!f->get_float("absent.key"));
    QVERIFY(!f->get_bool("absent.key"));
    QCOMPARE(f->get_uint("t.u32"), std::optional<uint64_t>(4000000000u));
    QCOMPARE(f->require_uint("t.u16"), uint64_t(60000));
    QCOMPARE(f->get_float("t.f64"), std::optional<double>(3.141592653589793));
    QCOMPARE(f->get_float("t.i32"), std::optional<double>(-2000000000.0));
    QCOMPARE(f->get_bool("t.bool_true"), std::optional<bool>(true));

    const auto error_of = [&](auto&& call) -> std::string {
        try {
            call();
        } catch (const Error& e) {
            return e.what();
        }
        return "<no error>";
    };
    const auto has = [](const std::string& msg, const char* word) {
        return msg.find(word) != std::string::npos;
    };
    std::string m = error_of([&] { f->get_string("t.u8"); });
    QVERIFY2(has(m, "'t.u8'") && has(m, "uint8") && has(m, "string"), m.c_str());
    m = error_of([&] { f->get_uint("t.i8"); });
    QVERIFY2(has(m, "'t.i8'") && has(m, "int8"), m.c_str());
    m = error_of([&] { f->get_float("t.str"); });
    QVERIFY2(has(m, "'t.str'"), m.c_str());
    m = error_of([&] { f->get_bool("t.u8"); });
    QVERIFY2(has(m, "'t.u8'") && has(m, "bool"), m.c_str());
    m = error_of([&] { f->require_string("no.such.key"); });
    QVERIFY2(has(m, "'no.such.key'") && has(m, "missing"), m.c_str());
    m = error_of([&] { f->require_uint("no.such.uint"); });
    QVERIFY2(has(m, "'no.such.uint'") && has(m, "missing"), m.c_str());
}

void TestGguf::customAlignment() {
    GgufWriter w;
    w.alignment = 64;
    w.add("general.alignment", gv::u32(64));
    w.add_tensor({"a", 0, {5}, pattern_bytes(20, 7)});
    w.add_tensor({"b", 8, {32, 3}, pattern_bytes(102, 8)});
    w.add_tensor({"c", 1, {3}, pattern_bytes(6, 9)});
    const auto offsets = w.tensor_offsets();
    QCOMPARE(offsets, (std::vector<uint64_t>{0, 64, 192}));
    const auto f = GgufFile::open(write(w));
    QCOMPARE(f->alignment(), size_t(64));
    QCOMPARE(f->tensors().size(), size_t(3));
    for (size_t i = 0; i < 3; ++i) {
        const GgufTensor& t = f->tensors()[i];
        QCOMPARE(t.offset, offsets[i]);
        QCOMPARE(reinterpret_cast<uintptr_t>(t.data) % 64, uintptr_t(0));
        QVERIFY(std::memcmp(t.data, w.tensors()[i].data.data(), t.n_bytes) == 0);
    }
}

void TestGguf::vocabOnlyFile() {
    GgufWriter w;
    w.add("tokenizer.ggml.model", gv::str("gpt2"));
    w.add("tokenizer.ggml.tokens", gv::arr(GgufType::String, {gv::str("a"), gv::str("bc")}));
    const auto bytes = w.bytes();
    QVERIFY(bytes.size() % 32 != 0);  // ends without padding, as real vocab files do
    const auto f = GgufFile::open(write(bytes));
    QVERIFY(f->tensors().empty());
    QCOMPARE(f->metadata().size(), size_t(2));
    QCOMPARE(f->find("tokenizer.ggml.tokens")->as_array()->size(), size_t(2));
}

void TestGguf::nestingAtLimit() {
    // Eight array levels, the deepest holding one string, are accepted.
    GgufValue v = gv::arr(GgufType::String, {gv::str("leaf")});
    for (int level = 1; level < 8; ++level) v = gv::arr(GgufType::Array, {v});
    GgufWriter w = base_writer();
    w.add("deep", v);
    const auto f = GgufFile::open(write(w));
    QVERIFY(same_value(*f->find("deep"), v));
}
