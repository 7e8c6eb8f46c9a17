#include "turn_composer.h"

#include "background_job.h"
#include "context_window.h"
#include "conversation_prompt.h"

namespace arbor::app {

namespace {

// What the store thread hands to the templating hop.
struct SavedTurn {
    ComposedTurn turn;
    StoredChat chat;  // the system prompt and the path the reply answers
};

SavedTurn save(arbor::Store& s, const TurnRequest& r, const std::vector<arbor::TokenId>& textIds, qint64& composed) {
    SavedTurn saved;
    ComposedTurn& turn = saved.turn;
    std::optional<arbor::MessageId> below = r.parent ? std::optional<arbor::MessageId>(r.parent) : std::nullopt;
    if (!r.text.empty()) {
        below = s.add_message(r.conversation, below, arbor::Role::User, r.text, textIds);
        turn.rows.push_back(messageRow(s, s.message(*below)));
        if (s.conversation(r.conversation).title.empty()) {
            turn.title = titleFrom(QString::fromStdString(r.text));
            s.rename_conversation(r.conversation, turn.title.toStdString());
        }
    }
    saved.chat = readChat(s, r.conversation, below);
    if (r.continued) {
        turn.reply = r.continued;
        turn.replyIds = s.message(r.continued).token_ids;
        return saved;
    }
    turn.reply = s.add_message(r.conversation, below, arbor::Role::Assistant, "", {}, arbor::MessageState::streaming);
    turn.rows.push_back(messageRow(s, s.message(turn.reply)));
    composed = turn.reply;
    return saved;
}

void fit(const arbor::ChatFormatter& formatter, const TurnRequest& r, SavedTurn& saved) {
    ComposedTurn& turn = saved.turn;
    // The system prompt, if any, then the path; only the path may be cut to fit.
    std::vector<arbor::ChatMessage> history = encodeChat(formatter, saved.chat);
    std::optional<arbor::ChatMessage> system;
    if (!history.empty() && history.front().role == arbor::Role::System) {
        system = std::move(history.front());
        history.erase(history.begin());
    }
    ContextWindow window = fitContext(formatter, system, history, int(turn.replyIds.size()), r.context, r.reserve);
    turn.prompt = std::move(window.prompt);
    turn.omitted = window.omitted;
    turn.error = QString::fromStdString(window.error);
}

} // namespace

QString titleFrom(const QString& text) {
    constexpr int kMaxTitle = 48;
    QString line = text.trimmed().section(QLatin1Char('\n'), 0, 0).simplified();
    if (line.size() > kMaxTitle) line = line.left(kMaxTitle - 1).trimmed() + QChar(0x2026);
    return line.isEmpty() ? QStringLiteral("New conversation") : line;
}

void composeTurn(QObject* receiver, StoreService& store, ModelService& models, TurnRequest request,
                 std::shared_ptr<qint64> composedReply, std::function<void(ComposedTurn)> done,
                 std::function<void(const QString&)> failed) {
    std::shared_ptr<LoadedModel> model = models.current();
    if (!model) return failed(QStringLiteral("no model is loaded"));
    // The user's words are tokenized here, so that their save is posted now, before any
    // later job of the session (its close among them): a message sent is kept.
    const std::vector<arbor::TokenId> ids =
        request.text.empty() ? std::vector<arbor::TokenId>{} : model->formatter->encode_content(request.text);
    const auto r = std::make_shared<const TurnRequest>(std::move(request));
    // Between the hops only the model's raw pointer is kept, so that the GUI thread never
    // drops its last reference (loaded_model.h); the templating job holds it and is
    // released on its pool thread. A model unloaded meanwhile makes the reply an error.
    auto sameModel = [&models, raw = model.get()] {
        auto current = models.current();
        return current.get() == raw ? current : nullptr;
    };
    store.call(
        receiver, [r, ids, composedReply](arbor::Store& s) { return save(s, *r, ids, *composedReply); },
        [receiver, sameModel, r, done, failed](SavedTurn saved) {
            auto model = sameModel();
            if (!model) {
                saved.turn.error = QStringLiteral("no model is loaded");
                return done(std::move(saved.turn));
            }
            runInBackground(
                receiver,
                [model, r, saved = std::move(saved)]() mutable {
                    fit(*model->formatter, *r, saved);
                    return std::move(saved.turn);
                },
                done, failed);
        },
        failed);
}

} // namespace arbor::app
