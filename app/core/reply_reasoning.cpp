#include "reply_reasoning.h"

#include "arbor/reply_reasoning.h"

namespace arbor::app {

ReplyParts splitReasoning(QStringView text, bool streaming) {
    const QByteArray utf8 = text.toUtf8();
    const arbor::ReplyParts parts = arbor::split_reasoning(std::string_view(utf8.constData(), size_t(utf8.size())), streaming);
    return {QString::fromStdString(parts.reasoning), QString::fromStdString(parts.answer), parts.reasoning_open};
}

} // namespace arbor::app
