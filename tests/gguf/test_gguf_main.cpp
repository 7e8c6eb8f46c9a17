#include "test_gguf.h"

#include <exception>

namespace arbor::test {

std::string open_error(const std::filesystem::path& path) {
    try {
        GgufFile::open(path);
    } catch (const Error& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("<threw a non-arbor exception: ") + e.what() + ">";
    }
    return "<opened without error>";
}

GgufWriter base_writer() {
    GgufWriter w;
    w.add("general.architecture", gv::str("test"));
    w.add_tensor({"t0", 0, {16}, pattern_bytes(64, 1)});
    w.add_tensor({"t1", 0, {8}, pattern_bytes(32, 2)});
    return w;
}

} // namespace arbor::test

void TestGguf::initTestCase() {
    QVERIFY(dir_.isValid());
    // The base file must be valid, or every broken-file case would prove nothing.
    const auto msg = arbor::test::open_error(write(arbor::test::base_writer()));
    QVERIFY2(msg == "<opened without error>", msg.c_str());
}

std::filesystem::path TestGguf::write(const std::vector<uint8_t>& bytes) {
    const auto path = std::filesystem::path(dir_.path().toStdString()) /
                      ("f" + std::to_string(counter_++) + ".gguf");
    arbor::test::write_file(path, bytes);
    return path;
}

QTEST_APPLESS_MAIN(TestGguf)
