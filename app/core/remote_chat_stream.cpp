#include "remote_chat_stream.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>

#include <atomic>
#include <memory>

namespace arbor::app {

namespace {

std::atomic<quint64> nextId{1};

// The "message" of an OpenAI error body ({"error": {"message": ...}}), else the body's
// first line as text (a proxy's HTML page, a plain-text answer).
QString errorMessageOf(const QByteArray& body) {
    const QJsonObject o = QJsonDocument::fromJson(body).object();
    const QJsonValue error = o.value(QStringLiteral("error"));
    if (error.isObject()) return error.toObject().value(QStringLiteral("message")).toString();
    if (error.isString()) return error.toString();
    return QString::fromUtf8(body.trimmed().left(200)).section(QLatin1Char('\n'), 0, 0);
}

ReplyStats::FinishReason reasonOf(const QString& finish) {
    return finish == QStringLiteral("length") ? ReplyStats::FinishReason::Length : ReplyStats::FinishReason::Stop;
}

} // namespace

QByteArray RemoteChatStream::body(const RemoteChatRequest& r) {
    const arbor::GenerateOptions& o = r.options;
    QJsonObject b{{"model", r.model.model},
                  {"messages", r.messages},
                  {"stream", true},
                  {"stream_options", QJsonObject{{"include_usage", true}}},
                  {"max_tokens", o.max_tokens},
                  {"temperature", double(o.sampler.temperature)},
                  {"top_p", double(o.sampler.top_p)},
                  // JSON numbers are doubles: a seed above 2^53 would not arrive as sent.
                  {"seed", qint64(o.sampler.seed & ((quint64(1) << 53) - 1))}};
    if (!o.stop_strings.empty()) {
        QJsonArray stop;
        for (const std::string& s : o.stop_strings) stop.append(QString::fromStdString(s));
        b.insert(QStringLiteral("stop"), stop);
    }
    return QJsonDocument(b).toJson(QJsonDocument::Compact);
}

Reply* RemoteChatStream::start(QNetworkAccessManager& network, const RemoteChatRequest& request, int stallMs,
                               QObject* owner) {
    auto target = std::make_shared<QPointer<RemoteChatStream>>();
    auto* reply = new Reply(nextId++, [target](quint64) {
        if (*target) (*target)->cancel();
    }, owner);
    auto* stream = new RemoteChatStream(reply, hostLabel(request.model.baseUrl), !request.key.isEmpty());
    *target = stream;

    QUrl url = request.model.baseUrl;
    url.setPath(url.path() + QStringLiteral("/chat/completions"));
    QNetworkRequest r(url);
    r.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    r.setRawHeader("Accept", "text/event-stream");
    r.setHeader(QNetworkRequest::UserAgentHeader, QStringLiteral("Arbor"));
    if (!request.key.isEmpty()) r.setRawHeader("Authorization", "Bearer " + request.key.toUtf8());
    // A key is never sent on to another host.
    r.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::SameOriginRedirectPolicy);
    stream->begin(network.post(r, body(request)), stallMs);
    return reply;
}

RemoteChatStream::RemoteChatStream(Reply* reply, QString host, bool withKey)
    : QObject(reply), reply_(reply), host_(std::move(host)), withKey_(withKey) {}

RemoteChatStream::~RemoteChatStream() {
    // The request goes with the stream (the Reply's owner went first); nothing may reach
    // this half-destroyed object.
    if (network_) network_->disconnect(this);
}

void RemoteChatStream::begin(QNetworkReply* network, int stallMs) {
    network_ = network;
    network->setParent(this);
    clock_.start();
    stall_.setSingleShot(true);
    stall_.setInterval(stallMs);
    connect(&stall_, &QTimer::timeout, this, &RemoteChatStream::stalled);
    connect(network, &QNetworkReply::readyRead, this, &RemoteChatStream::onReadyRead);
    connect(network, &QNetworkReply::finished, this, &RemoteChatStream::onNetworkFinished);
    stall_.start();
}

void RemoteChatStream::cancel() {
    if (ended_) return;
    cancelled_ = true;
    // Finished(Cancelled) comes later, as the engine's does, never inside the caller's
    // cancel() (abort() finishes the request synchronously).
    QMetaObject::invokeMethod(this, [this] {
        if (network_ && !ended_) network_->abort();
    }, Qt::QueuedConnection);
}

void RemoteChatStream::stalled() {
    stalledOut_ = true;
    if (network_) network_->abort();
}

void RemoteChatStream::onReadyRead() {
    stall_.start();
    buffer_ += network_->readAll();
    const int status = network_->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status == 200) readEvents(false);  // an error's body is read whole at the end
}

void RemoteChatStream::readEvents(bool atEnd) {
    // Events are lines; a partial line waits for the rest, except at the end.
    qsizetype start = 0;
    for (qsizetype nl; !ended_ && (nl = buffer_.indexOf('\n', start)) >= 0; start = nl + 1) {
        const QByteArray line = buffer_.mid(start, nl - start).trimmed();
        if (line.startsWith("data:")) readEvent(line.mid(5).trimmed());
    }
    buffer_.remove(0, start);
    if (atEnd && !ended_ && buffer_.trimmed().startsWith("data:")) readEvent(buffer_.trimmed().mid(5).trimmed());
}

void RemoteChatStream::readEvent(const QByteArray& data) {
    if (done_) return;
    if (data == "[DONE]") {
        done_ = true;
        return;
    }
    QJsonParseError parseError;
    const QJsonObject chunk = QJsonDocument::fromJson(data, &parseError).object();
    if (parseError.error != QJsonParseError::NoError) {
        streamError_ = tr("the server sent a chunk that is not JSON (%1)").arg(parseError.errorString());
        if (network_) network_->abort();
        return;
    }
    if (chunk.contains(QStringLiteral("error"))) {
        streamError_ = tr("the server reported an error: %1").arg(errorMessageOf(data));
        return;
    }
    const QJsonArray choices = chunk.value(QStringLiteral("choices")).toArray();
    if (!choices.isEmpty()) {
        const QJsonObject choice = choices.first().toObject();
        const QJsonObject delta = choice.value(QStringLiteral("delta")).toObject();
        QString reasoning = delta.value(QStringLiteral("reasoning_content")).toString();
        if (reasoning.isEmpty()) reasoning = delta.value(QStringLiteral("reasoning")).toString();
        const QString content = delta.value(QStringLiteral("content")).toString();
        QString text;
        if (!reasoning.isEmpty()) {
            if (!inReasoning_) text += QStringLiteral("<think>");
            inReasoning_ = true;
            text += reasoning;
        }
        if (!content.isEmpty()) {
            if (inReasoning_) text += QStringLiteral("</think>");
            inReasoning_ = false;
            text += content;
        }
        if (!text.isEmpty()) {
            lastMs_ = double(clock_.nsecsElapsed()) / 1e6;
            if (firstMs_ < 0) firstMs_ = lastMs_;
            emit reply_->token(-1, text);
        }
        const QJsonValue finish = choice.value(QStringLiteral("finish_reason"));
        if (finish.isString()) reason_ = reasonOf(finish.toString());
    }
    const QJsonObject usage = chunk.value(QStringLiteral("usage")).toObject();
    if (!usage.isEmpty()) {
        stats_.promptTokens = usage.value(QStringLiteral("prompt_tokens")).toInt(-1);
        stats_.generatedTokens = usage.value(QStringLiteral("completion_tokens")).toInt(-1);
        const QJsonValue cached = usage.value(QStringLiteral("prompt_tokens_details")).toObject().value(QStringLiteral("cached_tokens"));
        if (cached.isDouble()) stats_.cachedTokens = cached.toInt();
    }
}

QString remoteHttpProblem(const QString& host, int status, const QByteArray& body, bool withKey) {
    const QString said = errorMessageOf(body);
    const QString detail = said.isEmpty() ? QString() : QStringLiteral(": ") + said;
    if (status == 401)
        return withKey ? RemoteChatStream::tr("%1 refused the API key (HTTP 401)%2").arg(host, detail)
                       : RemoteChatStream::tr("%1 needs an API key (HTTP 401)%2").arg(host, detail);
    if (status == 404) return RemoteChatStream::tr("%1 has no such model or API (HTTP 404)%2").arg(host, detail);
    return RemoteChatStream::tr("%1 answered HTTP %2%3").arg(host).arg(status).arg(detail);
}

void RemoteChatStream::onNetworkFinished() {
    stall_.stop();
    if (ended_ || !network_) return;
    const QNetworkReply::NetworkError error = network_->error();
    const int status = network_->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (!cancelled_ && !stalledOut_) buffer_ += network_->readAll();
    if (status == 200 && !cancelled_) readEvents(true);
    if (cancelled_) return finish(ReplyStats::FinishReason::Cancelled);
    if (stalledOut_)
        return finish(ReplyStats::FinishReason::Error,
                      tr("%1 sent nothing for %2 s; the reply was given up").arg(host_).arg(stall_.interval() / 1000.0));
    if (!streamError_.isEmpty()) return finish(ReplyStats::FinishReason::Error, streamError_);
    if (status >= 300) return finish(ReplyStats::FinishReason::Error, remoteHttpProblem(host_, status, buffer_, withKey_));
    if (status == 0)  // no answer at all
        return finish(ReplyStats::FinishReason::Error, tr("cannot reach %1: %2").arg(host_, network_->errorString()));
    if (!done_) {
        const bool reason = error != QNetworkReply::NoError && error != QNetworkReply::RemoteHostClosedError;
        return finish(ReplyStats::FinishReason::Error,
                      tr("the connection to %1 ended before the reply was complete%2")
                          .arg(host_, reason ? QStringLiteral(" (%1)").arg(network_->errorString()) : QString()));
    }
    finish(reason_);
}

void RemoteChatStream::finish(ReplyStats::FinishReason reason, const QString& error) {
    ended_ = true;
    // A reply that ends while still reasoning (cut off, stopped, or all reasoning) keeps
    // its thoughts apart from an empty answer.
    if (inReasoning_) emit reply_->token(-1, QStringLiteral("</think>"));
    inReasoning_ = false;
    ReplyStats s = stats_;
    s.finishReason = reason;
    s.error = error;
    if (firstMs_ >= 0) s.timeToFirstTokenMs = firstMs_;
    // Tokens after the first over the time they took, as the engine measures decoding.
    if (s.generatedTokens > 1 && lastMs_ > firstMs_) s.tokensPerSecond = (s.generatedTokens - 1) / ((lastMs_ - firstMs_) / 1000.0);
    reply_->finish(s);
}

} // namespace arbor::app
