// What the chat-template tests share: the files of tests/data/chat_templates, JSON to
// template values, and the pinned strftime_now the expected renders were made with
// (make_expected.py pins it the same way).
#pragma once

#include "test_support.h"

#include "arbor/jinja.h"
#include "arbor/tokenizer.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>

#include <algorithm>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

namespace arbor::test {

inline QByteArray chat_template_fixture(const QString& name) {
    QFile f(QString::fromStdString((test_data_dir() / "chat_templates").string()) + "/" + name);
    if (!f.open(QIODevice::ReadOnly)) qFatal("cannot open %s", qPrintable(f.fileName()));
    return f.readAll();
}

inline jinja::Value to_value(const QJsonValue& v) {
    switch (v.type()) {
    case QJsonValue::Bool: return jinja::Value(v.toBool());
    case QJsonValue::Double: return jinja::Value(v.toDouble());
    case QJsonValue::String: return jinja::Value(v.toString().toStdString());
    case QJsonValue::Array: {
        jinja::Array a;
        for (const QJsonValue& item : v.toArray()) a.push_back(to_value(item));
        return jinja::Value(std::move(a));
    }
    case QJsonValue::Object: {
        jinja::Object o;
        const QJsonObject obj = v.toObject();
        for (auto it = obj.begin(); it != obj.end(); ++it) o.emplace_back(it.key().toStdString(), to_value(it.value()));
        return jinja::Value(std::move(o));
    }
    default: return jinja::Value(nullptr);
    }
}

// strftime_now at 2026-11-27 12:00:00.
inline jinja::Value pinned_strftime_now() {
    return jinja::Value(jinja::Function([](jinja::CallArgs& a) {
        std::tm tm{};
        tm.tm_year = 2026 - 1900;
        tm.tm_mon = 10;
        tm.tm_mday = 27;
        tm.tm_hour = 12;
        tm.tm_wday = 5;  // a Friday
        tm.tm_yday = 330;
        char buf[128];
        const std::string fmt = a.positional.empty() ? "" : a.positional[0].str();
        return jinja::Value(std::string(buf, std::strftime(buf, sizeof buf, fmt.c_str(), &tm)));
    }));
}

// The time the expected renders show (2026-11-27 12:00:00, local), for ChatFormatter.
inline std::time_t pinned_now() {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 10;
    tm.tm_mday = 27;
    tm.tm_hour = 12;
    tm.tm_isdst = -1;
    return std::mktime(&tm);
}

// A rendered prompt as the formatter tokenizes it: the text around the message contents
// with special tokens, each content (found in the text, where the template put it) as its
// own ids.
inline std::vector<TokenId> spliced_ids(const Tokenizer& tok, const std::string& text,
                                        const std::vector<std::pair<std::string, std::vector<TokenId>>>& contents) {
    std::vector<std::pair<size_t, size_t>> spots;  // where, which
    for (size_t i = 0; i < contents.size(); ++i) spots.emplace_back(text.find(contents[i].first), i);
    std::sort(spots.begin(), spots.end());
    std::vector<TokenId> out;
    size_t at = 0;
    for (const auto& [where, i] : spots) {
        if (where == std::string::npos || where < at) return {};  // not there: matches no prompt
        for (const auto& ids : {tok.encode(text.substr(at, where - at), false, true), contents[i].second})
            out.insert(out.end(), ids.begin(), ids.end());
        at = where + contents[i].first.size();
    }
    const auto tail = tok.encode(text.substr(at), false, true);
    out.insert(out.end(), tail.begin(), tail.end());
    return out;
}

} // namespace arbor::test
