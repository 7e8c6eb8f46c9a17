#include "reply_reasoning.h"

#include "arbor/reply_reasoning.h"

namespace arbor::app {

namespace {

std::string_view view(const QByteArray& utf8) { return {utf8.constData(), size_t(utf8.size())}; }

// Brings `part` (the QString of a part that was `before` bytes of UTF-8) to `now`, the part
// unchanged below `from` bytes: only the new bytes are converted where it only grew. (The
// part's ends are never inside a character: markers and trimmed whitespace are ASCII, and
// pieces are whole characters.) True when it changed; `grewFrom` as PartsChange has it.
bool follow(QString& part, const std::string& now, size_t before, size_t from, qsizetype& grewFrom) {
    if (from >= before) {
        if (now.size() == before) return false;
        grewFrom = part.size();
        part += QString::fromUtf8(now.data() + before, qsizetype(now.size() - before));
        return true;
    }
    QString whole = QString::fromUtf8(now.data(), qsizetype(now.size()));
    if (whole == part) return false;
    grewFrom = whole.startsWith(part) ? part.size() : -1;
    part = std::move(whole);
    return true;
}

} // namespace

ReplyParts splitReasoning(QStringView text, bool streaming) {
    const QByteArray utf8 = text.toUtf8();
    const arbor::ReplyParts parts = arbor::split_reasoning(view(utf8), streaming);
    return {QString::fromStdString(parts.reasoning), QString::fromStdString(parts.answer), parts.reasoning_open};
}

PartsChange partsChange(const ReplyParts& before, const ReplyParts& after) {
    PartsChange change;
    change.reasoning = after.reasoning != before.reasoning;
    change.reasoningOpen = after.reasoningOpen != before.reasoningOpen;
    change.answer = after.answer != before.answer;
    if (change.answer && after.answer.startsWith(before.answer)) change.answerGrewFrom = before.answer.size();
    return change;
}

LiveReplyParts::LiveReplyParts(QStringView text) {
    add(text);
}

PartsChange LiveReplyParts::add(QStringView piece) {
    const size_t reasoningBefore = split_.parts().reasoning.size(), answerBefore = split_.parts().answer.size();
    const arbor::ReplySplitStream::Change from = split_.add(view(piece.toUtf8()));
    size_ += piece.size();
    const arbor::ReplyParts& now = split_.parts();
    PartsChange change;
    qsizetype unused = -1;
    change.reasoning = follow(parts_.reasoning, now.reasoning, reasoningBefore, from.reasoning_from, unused);
    change.answer = follow(parts_.answer, now.answer, answerBefore, from.answer_from, change.answerGrewFrom);
    change.reasoningOpen = parts_.reasoningOpen != now.reasoning_open;
    parts_.reasoningOpen = now.reasoning_open;
    return change;
}

} // namespace arbor::app
