// Which model of which OpenAI-compatible server a conversation uses, as one string that
// fits where a local model's file path is kept (conversations.model): "remote:" followed
// by the endpoint's base URL with the model's id as its fragment, e.g.
// "remote:http://gpu-box:8000/v1#Qwen/Qwen3-8B". A file path never starts with "remote:".
#pragma once

#include <QString>
#include <QUrl>

namespace arbor::app {

struct RemoteModelRef {
    QUrl baseUrl;   // ends in the API's version path, e.g. http://host:8000/v1; no fragment
    QString model;  // the server's id of the model (/v1/models)

    bool isValid() const { return baseUrl.isValid() && !baseUrl.isEmpty() && !model.isEmpty(); }
    QString toString() const;
    // "model @ host[:port]", as the picker lists it; empty for an invalid reference.
    QString label() const;

    // The reference in `text`, or an invalid one when `text` is not a remote reference
    // (a local file path).
    static RemoteModelRef parse(const QString& text);
    static bool isRemote(const QString& text) { return text.startsWith(QLatin1StringView(kPrefix)); }
    static constexpr const char* kPrefix = "remote:";
};

// The base URL a user typed, made canonical: http or https only, no query or fragment, no
// trailing slash; a URL without a path gets "/v1" (where every OpenAI-compatible server
// serves). Sets `problem` and returns an empty URL when it cannot be one.
QUrl normalizedBaseUrl(const QString& typed, QString* problem);

// The host and port of a base URL as shown to people ("gpu-box:8000").
QString hostLabel(const QUrl& baseUrl);

} // namespace arbor::app
