#include "conversation_settings_form.h"

#include <QCoreApplication>

#include <cmath>
#include <optional>

namespace arbor::app {

namespace {

bool unset(const QVariant& v) {
    return !v.isValid() || v.isNull() || (v.typeId() == QMetaType::QString && v.toString().trimmed().isEmpty());
}

QString numberText(double v) { return QString::number(v, 'g', 12); }

// A number within [lo, hi] (whole when T is integral), or unset; else the reason.
template <class T>
QString readOptional(const QVariant& v, double lo, double hi, std::optional<T>& out) {
    out.reset();
    if (unset(v)) return {};
    bool ok = false;
    const double d = v.typeId() == QMetaType::QString ? v.toString().trimmed().toDouble(&ok) : v.toDouble(&ok);
    if (!ok || !std::isfinite(d) || d < lo || d > hi)
        return QCoreApplication::translate("ConversationSettings", "must be a number from %1 to %2")
            .arg(numberText(lo), numberText(hi));
    if constexpr (std::is_integral_v<T>) {
        if (d != std::floor(d)) return QCoreApplication::translate("ConversationSettings", "must be a whole number");
    }
    out = T(d);
    return {};
}

QString unescapeLine(const QString& line) {
    QString out;
    for (qsizetype i = 0; i < line.size(); ++i) {
        const QChar c = line[i];
        if (c != QLatin1Char('\\') || i + 1 == line.size()) {
            out += c;
            continue;
        }
        const QChar next = line[++i];
        if (next == QLatin1Char('n')) out += QLatin1Char('\n');
        else if (next == QLatin1Char('t')) out += QLatin1Char('\t');
        else if (next == QLatin1Char('\\')) out += QLatin1Char('\\');
        else out += QString(c) + next;  // not an escape: kept as typed
    }
    return out;
}

QString readStopStrings(const QVariant& v, std::vector<std::string>& out) {
    out.clear();
    for (const QString& line : v.toString().split(QLatin1Char('\n'))) {
        if (line.isEmpty()) continue;
        const QString stop = unescapeLine(line);
        if (stop.contains(QChar(0x1f)))
            return QCoreApplication::translate("ConversationSettings", "must not contain the unit separator (U+001F)");
        out.push_back(stop.toStdString());
    }
    if (int(out.size()) > SettingsLimits::kMaxStopStrings)
        return QCoreApplication::translate("ConversationSettings", "at most %1 stop strings")
            .arg(SettingsLimits::kMaxStopStrings);
    return {};
}

} // namespace

QVariantMap parseConversationSettings(const QVariantMap& fields, arbor::ConversationSettings& out) {
    using L = SettingsLimits;
    QVariantMap problems;
    auto check = [&](const char* key, const QString& problem) {
        if (!problem.isEmpty()) problems.insert(QLatin1String(key), problem);
    };
    auto field = [&](const char* key) { return fields.value(QLatin1String(key)); };
    arbor::ConversationSettings s;
    s.system_prompt = field("systemPrompt").toString().toStdString();
    check("temperature", readOptional(field("temperature"), 0.0, L::kMaxTemperature, s.temperature));
    check("topP", readOptional(field("topP"), 0.0, 1.0, s.top_p));
    check("topK", readOptional(field("topK"), 0.0, L::kMaxTopK, s.top_k));
    check("maxTokens", readOptional(field("maxTokens"), 1.0, L::kMaxMaxTokens, s.max_tokens));
    check("repetitionPenalty",
          readOptional(field("repetitionPenalty"), L::kMinRepetitionPenalty, L::kMaxRepetitionPenalty, s.repetition_penalty));
    check("minP", readOptional(field("minP"), 0.0, 1.0, s.min_p));
    check("seed", readOptional(field("seed"), 0.0, double(L::kMaxSeed), s.seed));
    check("stopStrings", readStopStrings(field("stopStrings"), s.stop_strings));
    // The store takes top-p in (0, 1]: 0 would keep no candidate.
    if (s.top_p && *s.top_p <= 0.0)
        check("topP", QCoreApplication::translate("ConversationSettings", "must be more than 0"));
    if (problems.isEmpty()) out = std::move(s);
    return problems;
}

QString stopStringsToText(const std::vector<std::string>& stops) {
    QStringList lines;
    for (const auto& stop : stops) {
        QString line = QString::fromStdString(stop);
        line.replace(QLatin1Char('\\'), QLatin1String("\\\\"));
        line.replace(QLatin1Char('\n'), QLatin1String("\\n"));
        line.replace(QLatin1Char('\t'), QLatin1String("\\t"));
        lines << line;
    }
    return lines.join(QLatin1Char('\n'));
}

} // namespace arbor::app
