// Assertions shared by the store suites.
#pragma once

#include "arbor/store.h"

#include <QtTest>

#include <optional>
#include <string>

// Fails unless `expr` throws arbor::StoreError of the given kind; the message must name
// what went wrong (it is never empty).
#define ARBOR_EXPECT_STORE_ERROR(expr, expected_kind)                                     \
    do {                                                                                  \
        std::optional<arbor::StoreError::Kind> kind_;                                     \
        std::string message_;                                                             \
        try {                                                                             \
            expr;                                                                         \
        } catch (const arbor::StoreError& e) {                                            \
            kind_ = e.kind();                                                             \
            message_ = e.what();                                                          \
        }                                                                                 \
        QVERIFY2(kind_.has_value(), "no StoreError from: " #expr);                        \
        QVERIFY2(*kind_ == (expected_kind), ("wrong kind of error: " + message_).c_str()); \
        QVERIFY(!message_.empty());                                                       \
    } while (false)
