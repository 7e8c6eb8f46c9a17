// How a chat turn is made ready before its reply is generated, with no tokenizing or
// templating on the GUI thread or the store thread: a pool thread tokenizes the user's
// words; the store thread saves them as a message, adds the empty 'streaming' reply row
// and reads the path; a pool thread builds the prompt from the path (tokenizing what has
// no ids stored, the system prompt) and fits it to the context (context_window.h).
#pragma once

#include "conversation_prompt.h"
#include "message_rows.h"
#include "model_service.h"
#include "store_worker.h"

#include <QList>
#include <QString>

#include <functional>
#include <string>
#include <vector>

namespace arbor::app {

struct TurnRequest {
    qint64 conversation = 0;
    qint64 parent = 0;     // the message the turn goes below (0: a first message)
    std::string text;      // the user's new message; empty to answer `parent` again
    qint64 continued = 0;  // a reply to continue (then text is empty)
    int context = 0;       // the engine's context, in tokens
    int reserve = 0;       // of it, kept for the reply (replyReserve)
};

struct ComposedTurn {
    QList<MessageRow> rows;  // the new user message (if any) and the new reply, to show below parent
    qint64 reply = 0;        // the reply's message id: new, or the continued one
    std::vector<arbor::TokenId> replyIds;  // a continued reply: the ids it has so far
    std::vector<arbor::TokenId> prompt;    // the reply's prompt (without replyIds)
    std::vector<arbor::ChatMessage> chat;  // the messages it was composed from (for follow_up_prefix)
    int omitted = 0;   // messages of the path the prompt leaves out (context_window.h)
    QString formatNote;  // why the prompt is not in the model's own template's form (ChatFormatter::compose)
    QString error;     // the prompt cannot be made (a continued reply was left as it was)
    QString title;     // set when this turn gave the conversation its title
    bool promptOpensThink = false;  // the generation prompt opened a <think> (DeepSeek-R1 distills)
};

// The store thread's part of a turn (shared with remote turns, remote_turn.h): saves the
// user's message (if any, with `textIds`) and, when `addReply`, the empty 'streaming'
// reply row, and reads the chat the reply answers.
struct SavedTurn {
    ComposedTurn turn;
    StoredChat chat;  // the system prompt and the path the reply answers
};
SavedTurn saveTurn(arbor::Store& s, const TurnRequest& r, const std::vector<arbor::TokenId>& textIds, bool addReply);

// Marks the reply row of a turn whose tab went before it could be streamed stopped
// (finish reason cancelled), so that no row is left 'streaming'.
void markAbandoned(StoreService& store, qint64 reply);

// Composes the turn with the current model; done(turn) or failed(message) follows on the
// GUI thread unless `receiver` is gone by then (failed when the model is unloaded in
// between). The user's message is saved even when the receiver goes meanwhile; a reply
// row the receiver never received is marked stopped (finish reason cancelled).
void composeTurn(QObject* receiver, StoreService& store, ModelService& models, TurnRequest request,
                 std::function<void(ComposedTurn)> done, std::function<void(const QString&)> failed);

// The conversation's title from its first message: its first line, shortened.
QString titleFrom(const QString& text);

} // namespace arbor::app
