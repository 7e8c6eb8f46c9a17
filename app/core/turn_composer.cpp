#include "turn_composer.h"

#include "background_job.h"
#include "context_window.h"
#include "conversation_prompt.h"

#include "arbor/reply_reasoning.h"

namespace arbor::app {

SavedTurn saveTurn(arbor::Store& s, const TurnRequest& r, const std::vector<arbor::TokenId>& textIds, bool addReply) {
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
    if (!addReply) return saved;
    turn.reply = s.add_message(r.conversation, below, arbor::Role::Assistant, "", {}, arbor::MessageState::streaming);
    turn.rows.push_back(messageRow(s, s.message(turn.reply)));
    return saved;
}

void markAbandoned(StoreService& store, qint64 reply) {
    store.post([reply](StoreWorker& w) {
        if (!w.store()) return;
        try {
            ReplyStats stats;
            stats.finishReason = ReplyStats::FinishReason::Cancelled;
            w.store()->finish_message(reply, arbor::MessageState::stopped, stats.toMessage());
        } catch (const std::exception& e) {
            emit w.failed(QString::fromUtf8(e.what()));
        }
    });
}

namespace {

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
    if (!turn.prompt.empty()) {
        if (system) turn.chat.push_back(std::move(*system));
        turn.chat.insert(turn.chat.end(), std::make_move_iterator(history.begin() + window.omitted),
                         std::make_move_iterator(history.end()));
    }
    turn.error = QString::fromStdString(window.error);
    if (!turn.prompt.empty()) turn.formatNote = QString::fromStdString(window.refusal);
}

} // namespace

QString titleFrom(const QString& text) {
    constexpr int kMaxTitle = 48;
    QString line = text.trimmed().section(QLatin1Char('\n'), 0, 0).simplified();
    if (line.size() > kMaxTitle) line = line.left(kMaxTitle - 1).trimmed() + QChar(0x2026);
    return line.isEmpty() ? QStringLiteral("New conversation") : line;
}

void composeTurn(QObject* receiver, StoreService& store, ModelService& models, TurnRequest request,
                 std::function<void(ComposedTurn)> done, std::function<void(const QString&)> failed) {
    std::shared_ptr<LoadedModel> model = models.current();
    if (!model) return failed(QStringLiteral("no model is loaded"));
    const auto r = std::make_shared<const TurnRequest>(std::move(request));
    // Every hop runs while the store service lives, whether or not the receiver does: a
    // message sent is kept even when its tab closes while it is tokenized, and a reply row
    // added for a receiver gone by then is marked stopped (abandon), not left 'streaming'.
    // Only done and failed wait for the receiver.
    const QPointer<QObject> who(receiver);
    StoreService* const service = &store;
    auto fail = [who, failed](const QString& message) {
        if (who) failed(message);
    };
    auto abandon = [service](const ComposedTurn& turn, const TurnRequest& r) {
        if (r.continued || turn.reply == 0) return;  // no row of its own was added
        markAbandoned(*service, turn.reply);
    };
    // Between the hops only the model's raw pointer is kept, so that the GUI thread never
    // drops its last reference (loaded_model.h); the jobs that hold it are released on
    // their pool thread. A model unloaded meanwhile makes the reply an error.
    auto sameModel = [&models, raw = model.get()] {
        auto current = models.current();
        return current.get() == raw ? current : nullptr;
    };
    auto fitted = [who, done, abandon, r](ComposedTurn turn) {
        if (who) done(std::move(turn));
        else abandon(turn, *r);
    };
    auto saved = [service, who, sameModel, r, fitted, fail](SavedTurn saved) {
        auto model = sameModel();
        if (!model || !who) {
            if (!model) saved.turn.error = QStringLiteral("no model is loaded");
            return fitted(std::move(saved.turn));
        }
        runInBackground(
            service,
            [model, r, saved = std::move(saved)]() mutable {
                fit(*model->formatter, *r, saved);
                saved.turn.promptOpensThink = arbor::prompt_opens_think(model->model->tokenizer(), saved.turn.prompt);
                return std::move(saved.turn);
            },
            fitted, fail);
    };
    // The user's words are tokenized on a pool thread (a long paste takes a while), then
    // saved with their ids; the reply row is only added for a receiver still there.
    runInBackground(
        service,
        [model, r] {
            return r->text.empty() ? std::vector<arbor::TokenId>{} : model->formatter->encode_content(r->text);
        },
        [service, who, sameModel, r, saved, fail](std::vector<arbor::TokenId> ids) {
            if (!sameModel()) ids.clear();  // another model's ids: the text is tokenized when read
            service->call(
                service, [r, ids, reply = bool(who)](arbor::Store& s) { return saveTurn(s, *r, ids, reply); }, saved,
                fail);
        },
        fail);
}

} // namespace arbor::app
