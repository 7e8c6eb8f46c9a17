// GGUF reader tests on generated files: round trips, and one function per broken-file case.
#pragma once

#include "gguf_test_writer.h"
#include "test_support.h"

#include <QObject>
#include <QTemporaryDir>

#include <filesystem>
#include <string>
#include <vector>

namespace arbor::test {

// The arbor::Error message of opening `path`, or a text starting with '<' that says
// the open succeeded or threw something else.
std::string open_error(const std::filesystem::path& path);

// A valid writer with one metadata key and two F32 tensors "t0" [16] and "t1" [8].
GgufWriter base_writer();

} // namespace arbor::test

// Fails the current test unless opening PATH throws arbor::Error naming every word.
#define ARBOR_VERIFY_OPEN_ERROR(path, ...)                                              \
    do {                                                                               \
        const std::string msg_ = arbor::test::open_error(path);                        \
        for (const char* word_ : {__VA_ARGS__})                                        \
            QVERIFY2(msg_.find(word_) != std::string::npos,                            \
                     ("message '" + msg_ + "' lacks '" + word_ + "'").c_str());        \
    } while (false)

class TestGguf : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();

    // Valid files (test_gguf_roundtrip.cpp).
    void roundTrip_data();
    void roundTrip();
    void valueAccessors();
    void typedLookups();
    void customAlignment();
    void vocabOnlyFile();
    void nestingAtLimit();

    // File and header (test_gguf_header.cpp).
    void emptyFile();
    void missingPath();
    void directoryPath();
    void wrongMagic();
    void version1();
    void unsupportedVersion();
    void bigEndian();
    void absurdTensorCount();
    void absurdKvCount();

    // Metadata (test_gguf_header.cpp).
    void absurdArrayLength();
    void absurdStringLength();
    void absurdKeyLength();
    void invalidValueType();
    void invalidArrayElementType();
    void nestingTooDeep();
    void invalidBool();
    void duplicateMetadataKeys();
    void emptyKey();
    void alignmentZero();
    void alignmentNotPowerOfTwo();
    void alignmentWrongType();

    // Tensor table and data (test_gguf_tensors.cpp).
    void unknownTensorType();
    void nonWeightTensorType();
    void dimsCount_data();
    void dimsCount();
    void zeroDim();
    void dimNotMultipleOfBlock();
    void elementCountOverflow();
    void byteSizeOverflow();
    void tensorDataBeyondEnd();
    void tensorOffsetOverflow();
    void overlappingTensors();
    void duplicateTensorNames();
    void misalignedOffset();
    void truncatedEverywhere();
    void randomCorruption();

private:
    QTemporaryDir dir_;
    int counter_ = 0;

    // Writes the bytes to a fresh file in the temporary directory.
    std::filesystem::path write(const std::vector<uint8_t>& bytes);
    std::filesystem::path write(const arbor::test::GgufWriter& w) { return write(w.bytes()); }
};
