#include "chat_session.h"

#include "context_window.h"
#include "conversation_settings_form.h"
#include "remote_endpoints.h"
#include "remote_turn.h"

#include <QRandomGenerator>


namespace arbor::app {

namespace {

// The figures of a reply that ended for `reason` before the engine measured any.
ReplyStats statsFor(ReplyStats::FinishReason reason, const QString& error = {}) {
    ReplyStats stats;
    stats.finishReason = reason;
    stats.error = error;
    return stats;
}

template <class T>
QVariant optionalToVariant(const std::optional<T>& v) { return v ? QVariant::fromValue(*v) : QVariant(); }

} // namespace

ChatSession::ChatSession(qint64 conversationId, StoreService& store, ModelService& models, QObject* parent)
    : QObject(parent), conversation_(conversationId), store_(store), models_(models), messages_(store) {
    flushTimer_.setInterval(kFlushIntervalMs);
    connect(&flushTimer_, &QTimer::timeout, this, &ChatSession::flush);
    connect(&models_, &ModelService::aboutToUnload, this, &ChatSession::onUnload);
    connect(&messages_, &MessageListModel::loaded, this, [this] {
        if (phase_ == Phase::idle) {
            showContextOfLastRow();
            // The note was about the turn last composed, not the branch now shown.
            setFormatNote({});
        }
        emit leafChanged();
    });
}

void ChatSession::showContextOfLastRow() {
    // The context the branch takes: the prompt of its latest measured reply, plus that
    // reply and every row after it. A reply whose stats were never written (the app was
    // killed mid-reply) or a user row after it would otherwise read as an empty context.
    const int rows = messages_.rowCount();
    if (rows == 0) return;
    int tokens = 0;
    int omitted = 0;
    for (int row = rows - 1; row >= 0; --row) {
        const MessageRow& message = messages_.row(row);
        tokens += message.tokenCount;
        if (message.role == arbor::Role::Assistant && message.stats.promptTokens >= 0) {
            tokens += message.stats.promptTokens;
            omitted = message.stats.omittedMessages;
            break;
        }
    }
    setContextTokens(tokens);
    setOmittedMessages(omitted);
}

QVariant ChatSession::temperature() const { return optionalToVariant(settings_.temperature); }
QVariant ChatSession::topP() const { return optionalToVariant(settings_.top_p); }
QVariant ChatSession::topK() const { return optionalToVariant(settings_.top_k); }
QVariant ChatSession::maxTokens() const { return optionalToVariant(settings_.max_tokens); }
QVariant ChatSession::repetitionPenalty() const { return optionalToVariant(settings_.repetition_penalty); }
QVariant ChatSession::minP() const { return optionalToVariant(settings_.min_p); }
QVariant ChatSession::seed() const { return optionalToVariant(settings_.seed); }
QString ChatSession::stopStrings() const { return stopStringsToText(settings_.stop_strings); }

ChatSession::~ChatSession() {
    // While composing, the composer marks the reply row it adds stopped (turn_composer.h).
    if (phase_ != Phase::streaming) return;
    if (request_) request_->cancel();
    // The session is going away: write what was generated without waiting for an answer.
    const qint64 id = reply_;
    const std::string text = pendingText_.toStdString();
    const auto ids = std::move(pendingIds_);
    store_.post([id, text, ids](StoreWorker& w) {
        if (!w.store()) return;
        try {
            if (!text.empty() || !ids.empty()) w.store()->append_to_message(id, text, ids);
            ReplyStats stats;
            stats.finishReason = ReplyStats::FinishReason::Cancelled;
            w.store()->finish_message(id, arbor::MessageState::stopped, stats.toMessage());
        } catch (const std::exception& e) {
            emit w.failed(QString::fromUtf8(e.what()));
        }
    });
}

void ChatSession::open(qint64 leaf) {
    const qint64 id = conversation_;
    store_.call(
        this, [id](arbor::Store& s) { return s.conversation(id); },
        [this, saves = settingsSaves_](arbor::Conversation c) {
            setTitle(QString::fromStdString(c.title));
            // Settings saved while this was read are newer than what it read.
            if (saves == settingsSaves_) applySettings(c.settings);
            if (!modelRecorded_) setModelPath(QString::fromStdString(c.model));
            emit opened();
        },
        [this](const QString& message) { setError(message); });
    messages_.load(conversation_, leaf);
}

void ChatSession::setTitle(const QString& title) {
    if (title == title_) return;
    title_ = title;
    emit titleChanged();
}

void ChatSession::setError(const QString& error) {
    if (error == error_) return;
    error_ = error;
    emit errorChanged();
}

void ChatSession::setPhase(Phase phase) {
    const bool was = generating();
    phase_ = phase;
    if (was != generating()) emit generatingChanged();
}

bool ChatSession::send(const QString& text) {
    if (text.trimmed().isEmpty()) return false;
    return startTurn(messages_.leafId(), text);
}

bool ChatSession::regenerate(int row) {
    if (row < 0 || row >= messages_.rowCount() || messages_.row(row).role != arbor::Role::Assistant) {
        setError(QStringLiteral("only a reply can be regenerated"));
        return false;
    }
    return startTurn(messages_.row(row).parentId, {});
}

bool ChatSession::edit(int row, const QString& text) {
    if (row < 0 || row >= messages_.rowCount() || messages_.row(row).role != arbor::Role::User) {
        setError(QStringLiteral("only a message of yours can be edited"));
        return false;
    }
    if (text.trimmed().isEmpty()) return false;
    return startTurn(messages_.row(row).parentId, text);
}

void ChatSession::stop() {
    if (phase_ == Phase::streaming && request_) request_->cancel();
    // While composing, onComposed sees the flag and does not submit.
    if (phase_ == Phase::composing) stopRequested_ = true;
}

bool ChatSession::continueReply(int row) {
    const int last = messages_.rowCount() - 1;
    if (row < 0 || row != last || messages_.row(row).role != arbor::Role::Assistant ||
        (messages_.row(row).state != arbor::MessageState::complete && messages_.row(row).state != arbor::MessageState::stopped)) {
        setError(QStringLiteral("only the last reply, once finished, can be continued"));
        return false;
    }
    return startTurn(messages_.row(row).parentId, {}, messages_.row(row).id);
}

bool ChatSession::startTurn(qint64 parent, const QString& userText, qint64 continued) {
    if (phase_ != Phase::idle) {
        setError(QStringLiteral("a reply is still being generated"));
        return false;
    }
    if (const RemoteModelRef remote = RemoteModelRef::parse(modelPath_); remote.isValid())
        return startRemoteTurn(parent, userText, continued, remote);
    auto model = models_.current();
    if (!model) {
        setError(QStringLiteral("no model is loaded"));
        return false;
    }
    setError({});
    recordModel(model->path);
    stopRequested_ = false;
    setPhase(Phase::composing);
    const int context = model->engine->context_size();
    TurnRequest request{conversation_, parent, userText.toStdString(), continued, context,
                        replyReserve(settings_.max_tokens.value_or(kDefaultMaxTokens), context)};
    composeTurn(
        this, store_, models_, std::move(request),
        [this, parent, continued](ComposedTurn turn) { onComposed(parent, continued, turn); },
        [this](const QString& message) {
            setPhase(Phase::idle);
            setError(message);
        });
    return true;
}

bool ChatSession::startRemoteTurn(qint64 parent, const QString& userText, qint64 continued, const RemoteModelRef& model) {
    if (continued) {
        setError(QStringLiteral("a remote model's reply cannot be continued"));
        return false;
    }
    if (!models_.remotes()) {
        setError(QStringLiteral("remote servers are not available"));
        return false;
    }
    setError({});
    stopRequested_ = false;
    setPhase(Phase::composing);
    composeRemoteTurn(
        this, store_, TurnRequest{conversation_, parent, userText.toStdString()},
        [this, parent, model](ComposedTurn turn, QJsonArray messages) {
            if (!showTurn(parent, 0, turn)) return;
            continuedIds_ = 0;
            request_ = models_.remotes()->start(model, messages, generateOptions());
            remoteTurn_ = true;
            listen(0);
        },
        [this](const QString& message) {
            setPhase(Phase::idle);
            setError(message);
        });
    return true;
}

void ChatSession::onComposed(qint64 parent, qint64 continued, const ComposedTurn& turn) {
    if (!showTurn(parent, continued, turn)) return;
    std::vector<arbor::TokenId> prompt = turn.prompt;
    prompt.insert(prompt.end(), replyIds_.begin(), replyIds_.end());
    continuedIds_ = int(replyIds_.size());
    const int promptTokens = int(prompt.size());
    request_ = models_.start({std::move(prompt), generateOptions()});
    if (!request_) {
        finishReply(MessageState::error, statsFor(ReplyStats::FinishReason::Error, QStringLiteral("no model is loaded")));
        return;
    }
    remoteTurn_ = false;
    listen(promptTokens);
}

void ChatSession::listen(int promptTokens) {
    connect(request_, &Reply::token, this, &ChatSession::onToken);
    connect(request_, &Reply::progress, this, &ChatSession::setPrefill);
    connect(request_, &Reply::finished, this, &ChatSession::onFinished);
    emit requestStarted(request_);
    setPrefill(0, promptTokens);
    setContextTokens(promptTokens);
    flushTimer_.start();
}

bool ChatSession::showTurn(qint64 parent, qint64 continued, const ComposedTurn& turn) {
    if (!turn.title.isEmpty()) {
        setTitle(turn.title);
        emit retitled(turn.title);
    }
    if (continued) {
        if (!turn.error.isEmpty()) {  // it cannot go on: it stays as it was
            setPhase(Phase::idle);
            setError(turn.error);
            return false;
        }
        // Streaming again; the appends posted later run after this.
        store_.call(
            this, [continued](arbor::Store& s) { s.resume_message(continued); }, [] {},
            [this](const QString& message) { setError(message); });
    }
    setOmittedMessages(turn.omitted);
    setFormatNote(turn.formatNote);
    reply_ = turn.reply;
    chat_ = turn.chat;
    replyIds_ = turn.replyIds;
    pendingText_.clear();
    pendingIds_.clear();
    setPhase(Phase::streaming);
    // The new rows go below their parent (a continued reply's row is shown already); a
    // branch switched meanwhile is read again.
    if (!turn.rows.isEmpty() && !messages_.showBelow(conversation_, parent, turn.rows))
        messages_.load(conversation_, reply_);
    messages_.startLive(reply_);
    // The generation prompt opened a <think> (DeepSeek-R1 distills): the reply's text
    // begins with one too (text only, no id: the ids stay the tokens generated), so that
    // its reasoning is told apart wherever it stops, here and when read back.
    if (turn.promptOpensThink && !continued) {
        const QString open = QStringLiteral("<think>");
        pendingText_ += open;
        messages_.appendText(reply_, open);
    }
    emit leafChanged();
    if (stopRequested_) {
        finishReply(MessageState::stopped, statsFor(ReplyStats::FinishReason::Cancelled));
        return false;
    }
    if (!turn.error.isEmpty()) {
        setError(turn.error);
        finishReply(MessageState::error, statsFor(ReplyStats::FinishReason::Error, turn.error));
        return false;
    }
    return true;
}

arbor::GenerateOptions ChatSession::generateOptions() const {
    const arbor::ConversationSettings& s = settings_;
    arbor::GenerateOptions o;
    o.sampler.temperature = float(s.temperature.value_or(kDefaultTemperature));
    o.sampler.top_p = float(s.top_p.value_or(kDefaultTopP));
    o.sampler.top_k = s.top_k.value_or(kDefaultTopK);
    o.sampler.min_p = float(s.min_p.value_or(kDefaultMinP));
    o.sampler.repetition_penalty = float(s.repetition_penalty.value_or(kDefaultRepetitionPenalty));
    o.sampler.seed = s.seed ? std::uint64_t(*s.seed) : QRandomGenerator::global()->generate64();
    o.max_tokens = s.max_tokens.value_or(kDefaultMaxTokens);
    o.stop_strings = s.stop_strings;
    return o;
}

void ChatSession::setPrefill(int done, int total) {
    if (done == prefillDone_ && total == prefillTotal_) return;
    prefillDone_ = done;
    prefillTotal_ = total;
    emit prefillChanged();
}

void ChatSession::setContextTokens(int tokens) {
    if (tokens == contextTokens_) return;
    contextTokens_ = tokens;
    emit contextTokensChanged();
}

void ChatSession::setFormatNote(const QString& note) {
    if (note == formatNote_) return;
    formatNote_ = note;
    emit formatNoteChanged();
}

void ChatSession::setOmittedMessages(int omitted) {
    if (omitted == omittedMessages_) return;
    omittedMessages_ = omitted;
    emit omittedMessagesChanged();
}

void ChatSession::onToken(int tokenId, const QString& text) {
    setPrefill(0, 0);  // the prompt is read
    if (tokenId >= 0) {  // -1: held-back text flushed at the end
        setContextTokens(contextTokens_ + 1);
        pendingIds_.push_back(tokenId);
        replyIds_.push_back(tokenId);
    }
    pendingText_ += text;
    messages_.appendText(reply_, text);
}

void ChatSession::onFinished(const ReplyStats& engine) {
    // Stored per turn: a continued reply's own earlier ids, which were part of this
    // request's prompt, count as reply, not as prompt (so prompt + reply ids is the
    // context the branch takes).
    ReplyStats s = statsFor(engine.finishReason, engine.error);
    s.promptTokens = engine.promptTokens - continuedIds_;
    s.cachedTokens = std::min(engine.cachedTokens, s.promptTokens);
    s.diskTokens = std::min(engine.diskTokens, s.cachedTokens);
    if (engine.generatedTokens > 0) s.timeToFirstTokenMs = engine.timeToFirstTokenMs;
    if (engine.generatedTokens > 1) s.tokensPerSecond = engine.tokensPerSecond;
    MessageState state = MessageState::complete;
    if (engine.finishReason == ReplyStats::FinishReason::Cancelled) {
        state = MessageState::stopped;
    } else if (engine.finishReason == ReplyStats::FinishReason::Error) {
        state = MessageState::error;
        setError(engine.error);
    }
    // A remote reply has no ids here: the context it takes is what the server counted.
    if (remoteTurn_ && s.promptTokens >= 0) setContextTokens(s.promptTokens + std::max(0, engine.generatedTokens));
    finishReply(state, s);
    if (state == MessageState::complete && !remoteTurn_) warmFollowUp();
}

void ChatSession::warmFollowUp() {
    const auto model = models_.current();
    if (!model) return;
    arbor::Request warm;
    warm.prompt = model->formatter->follow_up_prefix(chat_, replyIds_);
    if (warm.prompt.empty()) return;
    warm.kind = arbor::RequestKind::PrefillOnly;
    models_.start(std::move(warm));  // nobody listens to its Reply: its pages stay in the cache
}

void ChatSession::onUnload() {
    // The bridge goes with the model: its Replies are deleted without finishing. A remote
    // reply does not depend on the local model.
    if (phase_ == Phase::streaming && !remoteTurn_) finishReply(MessageState::stopped, statsFor(ReplyStats::FinishReason::Unloaded));
}

void ChatSession::finishReply(MessageState state, ReplyStats stats) {
    flushTimer_.stop();
    flush();
    stats.omittedMessages = omittedMessages_;
    const qint64 id = reply_;
    store_.call(
        this, [id, state, stored = stats.toMessage()](arbor::Store& s) { s.finish_message(id, state, stored); },
        [this, id] {
            messages_.releaseLive(id);
            emit replyFinished(id);
        },
        [this, id](const QString& message) {
            messages_.releaseLive(id);
            setError(message);
        });
    messages_.setFinished(id, state, stats);
    if (request_) request_->disconnect(this);
    request_ = nullptr;
    setPrefill(0, 0);
    setPhase(Phase::idle);
}

void ChatSession::flush() {
    if (pendingText_.isEmpty() && pendingIds_.empty()) return;
    const qint64 id = reply_;
    const std::string text = pendingText_.toStdString();
    const auto ids = std::move(pendingIds_);
    pendingText_.clear();
    pendingIds_.clear();
    store_.call(
        this, [id, text, ids](arbor::Store& s) { s.append_to_message(id, text, ids); }, [] {},
        [this](const QString& message) { setError(message); });
}

QVariantMap ChatSession::settingsProblems(const QVariantMap& fields) const {
    arbor::ConversationSettings parsed;
    return parseConversationSettings(fields, parsed);
}

QString ChatSession::saveSettings(const QVariantMap& fields) {
    arbor::ConversationSettings settings;
    const QVariantMap problems = parseConversationSettings(fields, settings);
    if (!problems.isEmpty()) {
        QStringList lines;
        for (auto it = problems.begin(); it != problems.end(); ++it) lines << it.key() + ": " + it.value().toString();
        return lines.join(QLatin1Char('\n'));
    }
    ++settingsSaves_;
    applySettings(settings);
    const qint64 id = conversation_;
    store_.call(
        this, [id, settings](arbor::Store& s) { s.set_conversation_settings(id, settings); }, [] {},
        [this](const QString& message) { setError(message); });
    return {};
}

void ChatSession::setModelPath(const QString& path) {
    if (path == modelPath_) return;
    modelPath_ = path;
    emit modelPathChanged();
}

void ChatSession::useModel(const QString& model) {
    if (!model.isEmpty()) recordModel(model);
}

void ChatSession::recordModel(const QString& path) {
    modelRecorded_ = true;
    if (path == modelPath_) return;
    setModelPath(path);
    const qint64 id = conversation_;
    store_.call(
        this, [id, model = path.toStdString()](arbor::Store& s) { s.set_conversation_model(id, model); }, [] {},
        [this](const QString& message) { setError(message); });
}

void ChatSession::applySettings(const arbor::ConversationSettings& settings) {
    settings_ = settings;
    emit settingsChanged();
}

} // namespace arbor::app
