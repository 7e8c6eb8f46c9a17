#include "remote_turn.h"

#include "reply_reasoning.h"

#include <QJsonObject>

namespace arbor::app {

namespace {

QString roleName(arbor::Role role) {
    switch (role) {
    case arbor::Role::System: return QStringLiteral("system");
    case arbor::Role::User: return QStringLiteral("user");
    case arbor::Role::Assistant: return QStringLiteral("assistant");
    }
    return QStringLiteral("user");
}

} // namespace

QJsonArray openAiMessages(const StoredChat& chat) {
    QJsonArray messages;
    if (!chat.system.empty())
        messages.append(QJsonObject{{"role", "system"}, {"content", QString::fromStdString(chat.system)}});
    for (const arbor::Message& m : chat.path) {
        // A reply's reasoning is not sent back: servers expect the answers alone (DeepSeek's
        // refuses reasoning in the history), and the thoughts would cost prompt tokens.
        const QString text = QString::fromStdString(m.text);
        messages.append(QJsonObject{
            {"role", roleName(m.role)},
            {"content", m.role == arbor::Role::Assistant ? splitReasoning(text, false).answer : text}});
    }
    return messages;
}

void composeRemoteTurn(QObject* receiver, StoreService& store, TurnRequest request,
                       std::function<void(ComposedTurn, QJsonArray)> done, std::function<void(const QString&)> failed) {
    const QPointer<QObject> who(receiver);
    StoreService* const service = &store;
    store.call(
        service, [r = std::move(request), reply = bool(who)](arbor::Store& s) { return saveTurn(s, r, {}, reply); },
        [who, service, done](SavedTurn saved) {
            if (!who) {
                if (saved.turn.reply) markAbandoned(*service, saved.turn.reply);
                return;
            }
            done(std::move(saved.turn), openAiMessages(saved.chat));
        },
        [who, failed](const QString& message) {
            if (who) failed(message);
        });
}

} // namespace arbor::app
