// The conversation settings as the settings dialog edits them: a map of field values
// (numbers or their text; undefined, null or "" for the default) to validate field by
// field and turn into arbor::ConversationSettings, and back.
#pragma once

#include "arbor/store.h"

#include <QString>
#include <QStringList>
#include <QVariantMap>

namespace arbor::app {

// The fields and their ranges. The store checks the same limits or wider ones.
struct SettingsLimits {
    static constexpr double kMaxTemperature = 2.0;
    static constexpr int kMaxTopK = 1000;
    static constexpr int kMaxMaxTokens = 1 << 20;
    static constexpr double kMinRepetitionPenalty = 0.5;
    static constexpr double kMaxRepetitionPenalty = 2.0;
    static constexpr qint64 kMaxSeed = 4294967295;  // 2^32 - 1
    static constexpr int kMaxStopStrings = 8;
};

// Keys: systemPrompt (text), temperature, topP, topK, maxTokens, repetitionPenalty, minP,
// seed, stopStrings (text: one stop string a line, where \n, \t and \\ stand for a line
// break, a tab and a backslash; empty lines are ignored). Fills `out` and returns {} when
// every field is valid, else {key: why the field's value is refused}.
QVariantMap parseConversationSettings(const QVariantMap& fields, arbor::ConversationSettings& out);

// The stop strings as the stopStrings field writes them.
QString stopStringsToText(const std::vector<std::string>& stops);

} // namespace arbor::app
