// One open conversation (a tab): its messages along the branch shown, its settings, and
// at most one reply being generated. A turn is composed (turn_composer.h: the user
// message saved, an empty 'streaming' reply row added, the prompt built from the stored
// token ids of the path); the session then shows the new rows in its list model,
// submits the prompt to the shared engine, streams the Reply's tokens into the live
// row and writes them back to the store at least twice a second, without reloading.
// Once a reply is complete, the engine computes the opening of the next user turn ahead
// of time (warmFollowUp). A conversation whose model is a remote server's
// (remote_model_ref.h) sends its turns there instead (remote_turn.h): the same rows, the
// same Reply, stored the same way.
#pragma once

#include "message_list_model.h"
#include "model_service.h"
#include "remote_model_ref.h"
#include "store_worker.h"
#include "turn_composer.h"

#include <QObject>
#include <QPointer>
#include <QTimer>
#include <QVariant>
#include <QtQml/qqmlregistration.h>

#include <vector>

namespace arbor::app {

class ChatSession : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("opened through the tab list")
    Q_PROPERTY(qint64 conversationId READ conversationId CONSTANT)
    Q_PROPERTY(QString title READ title NOTIFY titleChanged)
    Q_PROPERTY(arbor::app::MessageListModel* messages READ messages CONSTANT)
    Q_PROPERTY(bool generating READ generating NOTIFY generatingChanged)
    Q_PROPERTY(QString error READ error NOTIFY errorChanged)
    // Per-conversation settings; an undefined value means "the default".
    Q_PROPERTY(QString systemPrompt READ systemPrompt NOTIFY settingsChanged)
    Q_PROPERTY(QVariant temperature READ temperature NOTIFY settingsChanged)
    Q_PROPERTY(QVariant topP READ topP NOTIFY settingsChanged)
    Q_PROPERTY(QVariant topK READ topK NOTIFY settingsChanged)
    Q_PROPERTY(QVariant maxTokens READ maxTokens NOTIFY settingsChanged)
    Q_PROPERTY(QVariant repetitionPenalty READ repetitionPenalty NOTIFY settingsChanged)
    Q_PROPERTY(QVariant minP READ minP NOTIFY settingsChanged)
    Q_PROPERTY(QVariant seed READ seed NOTIFY settingsChanged)
    // As the settings dialog's field writes them (see conversation_settings_form.h).
    Q_PROPERTY(QString stopStrings READ stopStrings NOTIFY settingsChanged)
    // While the prompt of the reply being generated is computed: prefillDone of its
    // prefillTotal tokens are (the engine reports after each chunk). prefillTotal is 0
    // once the first token came, and when no reply is being generated.
    Q_PROPERTY(int prefillDone READ prefillDone NOTIFY prefillChanged)
    Q_PROPERTY(int prefillTotal READ prefillTotal NOTIFY prefillChanged)
    // Tokens of the context the branch shown takes: the last reply's prompt and the reply
    // (0 while unknown: no reply on the branch yet).
    Q_PROPERTY(int contextTokens READ contextTokens NOTIFY contextTokensChanged)
    // How many of the oldest messages shown the last reply's prompt left out because the
    // whole branch did not fit the model's context (see context_window.h); 0 when none.
    Q_PROPERTY(int omittedMessages READ omittedMessages NOTIFY omittedMessagesChanged)
    // Why the reply being written or last written in this session was prompted in a
    // built-in format rather than the model's own template (arbor::ChatFormatter::compose),
    // one sentence; empty when the template was followed.
    Q_PROPERTY(QString formatNote READ formatNote NOTIFY formatNoteChanged)
    // The model file the conversation last generated with (stored with it; each turn
    // started records the model then loaded), or a remote model's reference
    // (RemoteModelRef::toString); empty when none is recorded.
    Q_PROPERTY(QString modelPath READ modelPath NOTIFY modelPathChanged)
    // The conversation generates with a remote server's model (modelPath names it).
    Q_PROPERTY(bool remote READ remote NOTIFY modelPathChanged)
public:
    // Defaults for what a conversation leaves unset.
    static constexpr double kDefaultTemperature = 0.7;
    static constexpr double kDefaultTopP = 0.9;
    static constexpr int kDefaultTopK = 40;
    static constexpr int kDefaultMaxTokens = 1024;
    static constexpr double kDefaultRepetitionPenalty = 1.0;  // off
    static constexpr double kDefaultMinP = 0.05;
    // Text and token ids of a streaming reply reach the store this often.
    static constexpr int kFlushIntervalMs = 500;

    ChatSession(qint64 conversationId, StoreService& store, ModelService& models, QObject* parent = nullptr);
    ~ChatSession() override;  // cancels its generation

    qint64 conversationId() const { return conversation_; }
    QString title() const { return title_; }
    MessageListModel* messages() { return &messages_; }
    bool generating() const { return phase_ != Phase::idle; }
    QString error() const { return error_; }
    QString systemPrompt() const { return QString::fromStdString(settings_.system_prompt); }
    QVariant temperature() const;
    QVariant topP() const;
    QVariant topK() const;
    QVariant maxTokens() const;
    QVariant repetitionPenalty() const;
    QVariant minP() const;
    QVariant seed() const;
    QString stopStrings() const;
    int prefillDone() const { return prefillDone_; }
    int prefillTotal() const { return prefillTotal_; }
    int contextTokens() const { return contextTokens_; }
    int omittedMessages() const { return omittedMessages_; }
    QString formatNote() const { return formatNote_; }
    QString modelPath() const { return modelPath_; }
    bool remote() const { return RemoteModelRef::isRemote(modelPath_); }

    // Loads the conversation (title, settings) and shows the branch ending at leaf (0:
    // the latest leaf).
    void open(qint64 leaf = 0);

    // Each returns false (and sets error) when it cannot start: a reply is already being
    // generated, no model is ready, or the row is of the wrong kind.
    Q_INVOKABLE bool send(const QString& text);
    // A new reply to the same user message, as a sibling branch of the reply at `row`.
    Q_INVOKABLE bool regenerate(int row);
    // A new version of the user message at `row` (a sibling branch), then its reply.
    Q_INVOKABLE bool edit(int row, const QString& text);
    // Generates more of the reply at `row` (one that stopped at max tokens or was
    // stopped), appended to the same message: its prompt is the reply's prompt followed
    // by the reply's ids, so the cache serves all of it. Only for the last message shown.
    Q_INVOKABLE bool continueReply(int row);
    Q_INVOKABLE void stop();
    // Makes `model` (a model file's path, or a remote model's reference) the conversation's
    // and stores it; its next turn uses a remote model, or the local model loaded.
    Q_INVOKABLE void useModel(const QString& model);

    // Validates and saves the per-conversation settings (keys and forms: see
    // parseConversationSettings). Returns the problems as "key: reason" lines, empty on
    // success (then nothing is changed).
    Q_INVOKABLE QString saveSettings(const QVariantMap& settings);
    // {key: reason} for each field of `settings` that saveSettings would refuse.
    Q_INVOKABLE QVariantMap settingsProblems(const QVariantMap& settings) const;

    void setTitle(const QString& title);  // after a rename elsewhere

signals:
    void titleChanged();
    void generatingChanged();
    void errorChanged();
    void settingsChanged();
    void prefillChanged();
    void contextTokensChanged();
    void omittedMessagesChanged();
    void formatNoteChanged();
    void modelPathChanged();
    void opened();
    // The engine request of a reply was submitted: its Reply, for observers of its events
    // besides this session (the engine's stats of it, the order of its tokens).
    void requestStarted(arbor::app::Reply* request);
    // A reply finished and is stored; `messageId` is its id (for the sidebar's order).
    void replyFinished(qint64 messageId);
    void leafChanged();  // the branch shown changed (for saving the open tabs)
    void retitled(const QString& title);  // the first message gave the conversation its title

private:
    enum class Phase { idle, composing, streaming };

    bool startTurn(qint64 parent, const QString& userText, qint64 continued = 0);
    bool startRemoteTurn(qint64 parent, const QString& userText, qint64 continued, const RemoteModelRef& model);
    // Shows the composed turn's rows and makes its reply the live one; false when the turn
    // ended there (stopped meanwhile, or its prompt could not be made).
    bool showTurn(qint64 parent, qint64 continued, const ComposedTurn& turn);
    // Streams `request_` into the live row; `promptTokens`: its prompt's size when known.
    void listen(int promptTokens);
    void setPrefill(int done, int total);
    void setContextTokens(int tokens);
    void setOmittedMessages(int omitted);
    void setFormatNote(const QString& note);
    void applySettings(const arbor::ConversationSettings& settings);
    void setModelPath(const QString& path);
    void recordModel(const QString& path);  // and store it
    void onComposed(qint64 parent, qint64 continued, const ComposedTurn& turn);
    void onToken(int tokenId, const QString& text);
    void onFinished(const ReplyStats& stats);
    void onUnload();
    void finishReply(arbor::MessageState state, ReplyStats stats);
    void showContextOfLastRow();
    // After a complete reply: has the engine compute how the next prompt will begin (the
    // reply's end of turn and the next user header) while the user types, so the
    // follow-up computes only its own words.
    void warmFollowUp();
    void flush();
    void setError(const QString& error);
    void setPhase(Phase phase);
    arbor::GenerateOptions generateOptions() const;

    const qint64 conversation_;
    StoreService& store_;
    ModelService& models_;
    MessageListModel messages_;
    QString title_;
    QString error_;
    arbor::ConversationSettings settings_;  // as stored
    quint64 settingsSaves_ = 0;  // saveSettings() calls so far: a read older than one is stale
    int prefillDone_ = 0, prefillTotal_ = 0;
    int contextTokens_ = 0;
    int omittedMessages_ = 0;
    QString formatNote_;
    QString modelPath_;
    bool modelRecorded_ = false;  // recordModel() ran: a read of the conversation is older

    Phase phase_ = Phase::idle;
    bool stopRequested_ = false;  // stop() while the turn was still being composed
    QPointer<Reply> request_;   // the engine's reply while streaming
    bool remoteTurn_ = false;   // request_ is a remote server's
    qint64 reply_ = 0;          // the streaming reply's message id (its row is live)
    std::vector<arbor::ChatMessage> chat_;  // the messages of the prompt it answers
    std::vector<std::int32_t> replyIds_;  // every id it has, for the follow-up's warm-up
    int continuedIds_ = 0;      // ids the reply had before this request continued it
    QString pendingText_;       // generated, not yet written to the store
    std::vector<std::int32_t> pendingIds_;
    QTimer flushTimer_;
};

} // namespace arbor::app
