// One streamed chat completion from an OpenAI-compatible server, produced as the same
// Reply a local engine request is: the text arrives as token(-1, text) signals (a remote
// reply has no ids of a local tokenizer), and finished() carries the same ReplyStats,
// with what the server reported (usage: prompt, cached and generated tokens) and what is
// measured here (time to the first text, tokens per second from the usage's count).
//
// The request is POST {baseUrl}/chat/completions with "stream": true; the answer is read
// as server-sent events: each `data:` line is a chunk, `data: [DONE]` ends the stream,
// and a chunk with an "error" object ends it with that error. A reasoning model's
// thoughts, sent apart from the answer as "reasoning_content" (DeepSeek, llama.cpp's
// server, Arbor's own API) or "reasoning" (OpenRouter, vLLM), are kept in the text inside
// <think> ... </think> before the answer: the markup the conversation view already
// shows collapsed (reply_reasoning.h), and which openAiMessages leaves out of the history. Every way the exchange
// can fail ends the Reply with FinishReason::Error and a message that says what happened:
// the server cannot be reached, it answers an HTTP error (401: the key), it closes the
// stream before [DONE], or it sends nothing for the stall time. Reply::cancel() aborts
// the request and finishes it as Cancelled, as a local stop does.
#pragma once

#include "remote_model_ref.h"
#include "reply.h"

#include "arbor/generate_options.h"

#include <QByteArray>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QObject>
#include <QPointer>
#include <QTimer>

class QNetworkAccessManager;
class QNetworkReply;

namespace arbor::app {

struct RemoteChatRequest {
    RemoteModelRef model;
    QString key;            // sent as "Authorization: Bearer KEY"; none when empty
    QJsonArray messages;    // [{role, content}], oldest first (the server templates them)
    arbor::GenerateOptions options;  // temperature, top_p, max_tokens, seed and stop are sent
};

// What an HTTP error answer of a remote server means, said for people: the host, the
// status (401: the key refused, or one needed) and the server's own message.
QString remoteHttpProblem(const QString& host, int status, const QByteArray& body, bool withKey);

class RemoteChatStream : public QObject {
    Q_OBJECT
public:
    // Starts the request; the Reply is a child of `owner` and deletes itself once finished
    // (the stream, its child, goes with it). `stallMs`: how long the server may send
    // nothing before the reply is given up.
    static Reply* start(QNetworkAccessManager& network, const RemoteChatRequest& request, int stallMs, QObject* owner);

    // The request's JSON body (exposed for the tests of what is sent).
    static QByteArray body(const RemoteChatRequest& request);

    ~RemoteChatStream() override;

private:
    RemoteChatStream(Reply* reply, QString host, bool withKey);  // a child of reply
    void begin(QNetworkReply* network, int stallMs);
    void onReadyRead();
    void onNetworkFinished();
    void readEvents(bool atEnd);
    void readEvent(const QByteArray& data);
    void finish(ReplyStats::FinishReason reason, const QString& error = {});
    void cancel();
    void stalled();

    Reply* const reply_;       // the parent of this stream
    const QString host_;
    const bool withKey_;
    QPointer<QNetworkReply> network_;
    QTimer stall_;
    QElapsedTimer clock_;
    QByteArray buffer_;        // received, not yet a whole line (or the error body)
    bool done_ = false;        // [DONE] arrived
    bool ended_ = false;       // the Reply finished
    bool stalledOut_ = false;
    bool cancelled_ = false;
    ReplyStats stats_;         // filled as chunks arrive
    ReplyStats::FinishReason reason_ = ReplyStats::FinishReason::Stop;
    QString streamError_;      // an error event's message
    double firstMs_ = -1.0, lastMs_ = -1.0;  // when the first and the latest text arrived
    bool inReasoning_ = false;  // a <think> was sent and its </think> not yet
};

} // namespace arbor::app
