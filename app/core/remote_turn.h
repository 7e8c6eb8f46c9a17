// How a turn for a remote model is made ready: the store thread saves the user's message
// and the empty 'streaming' reply row as for a local turn (saveTurn, without token ids: a
// remote model tokenizes with its own vocabulary) and reads the path; the chat goes to
// the server as OpenAI messages, which it templates itself. Nothing is cut to fit: the
// server's context is its own, and it says so in an error when the chat does not fit.
#pragma once

#include "turn_composer.h"

#include <QJsonArray>
#include <QPointer>

namespace arbor::app {

// The system prompt (if any) and the path, as [{role, content}].
QJsonArray openAiMessages(const StoredChat& chat);

// done(turn, messages) or failed(message) follows on the GUI thread unless `receiver` is
// gone by then; a reply row the receiver never received is marked stopped. A continued
// reply is not composed (request.continued must be 0).
void composeRemoteTurn(QObject* receiver, StoreService& store, TurnRequest request,
                       std::function<void(ComposedTurn, QJsonArray)> done, std::function<void(const QString&)> failed);

} // namespace arbor::app
