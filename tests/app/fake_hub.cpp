#include "fake_hub.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPointer>
#include <QRegularExpression>
#include <QTcpSocket>
#include <QTimer>

namespace arbor::test {

namespace {

QByteArray statusText(int status) {
    switch (status) {
    case 200: return "OK";
    case 206: return "Partial Content";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 416: return "Range Not Satisfiable";
    default: return "Status";
    }
}

} // namespace

FakeHub::FakeHub() {
    connect(&server_, &QTcpServer::newConnection, this, &FakeHub::newConnection);
    if (!server_.listen(QHostAddress::LocalHost, 0)) qFatal("fake Hub cannot listen: %s", qPrintable(server_.errorString()));
}

QUrl FakeHub::baseUrl() const { return QUrl(QStringLiteral("http://127.0.0.1:%1").arg(server_.serverPort())); }

QString FakeHub::sha256Of(const QByteArray& data) {
    return QString::fromLatin1(QCryptographicHash::hash(data, QCryptographicHash::Sha256).toHex());
}

void FakeHub::addFile(const QString& repository, const QString& path, const QByteArray& data) {
    repos_[repository][path] = File{data, {}};
}

void FakeHub::replaceFile(const QString& repository, const QString& path, const QByteArray& data) {
    repos_[repository][path].data = data;
}

void FakeHub::advertiseSha256(const QString& repository, const QString& path, const QString& sha256) {
    repos_[repository][path].advertisedSha = sha256;
}

void FakeHub::addWheel(const QString& project, const QString& version, const QString& file, const QByteArray& wheel,
                       const QString& advertisedSha256) {
    wheels_[file] = Wheel{project, version, File{wheel, advertisedSha256}};
}

QList<FakeHub::Request> FakeHub::requestsUnder(const QByteArray& prefix) const {
    QList<Request> out;
    for (const Request& r : requests_)
        if (r.path.startsWith(prefix)) out << r;
    return out;
}

QList<FakeHub::Request> FakeHub::fileRequests() const {
    QList<Request> out;
    for (const Request& r : requests_)
        if (r.path.contains("/resolve/")) out << r;
    return out;
}

void FakeHub::newConnection() {
    while (QTcpSocket* socket = server_.nextPendingConnection()) {
        connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
        auto buffer = std::make_shared<QByteArray>();
        connect(socket, &QTcpSocket::readyRead, this, [this, socket, buffer] {
            buffer->append(socket->readAll());
            const qsizetype end = buffer->indexOf("\r\n\r\n");
            if (end < 0) return;
            const QList<QByteArray> lines = buffer->left(end).split('\n');
            buffer->clear();
            Request r;
            const QList<QByteArray> first = lines.value(0).trimmed().split(' ');
            r.method = first.value(0);
            r.path = first.value(1);
            for (qsizetype i = 1; i < lines.size(); ++i) {
                const qsizetype colon = lines[i].indexOf(':');
                if (colon > 0) r.headers[lines[i].left(colon).trimmed().toLower()] = lines[i].mid(colon + 1).trimmed();
            }
            requests_ << r;
            handle(socket, r);
        });
    }
}

void FakeHub::handle(QTcpSocket* socket, const Request& request) {
    static const QRegularExpression tree(QStringLiteral("^/api/models/([^/]+/[^/]+)/tree/main$"));
    static const QRegularExpression resolve(QStringLiteral("^/([^/]+/[^/]+)/resolve/[^/]+/(.+)$"));
    static const QRegularExpression project(QStringLiteral("^/pypi/([^/]+)/json$"));
    static const QRegularExpression package(QStringLiteral("^/packages/([^/]+)$"));
    const QString path = QUrl::fromPercentEncoding(request.path);
    if (const auto m = tree.match(path); m.hasMatch()) return listing(socket, m.captured(1));
    if (const auto m = resolve.match(path); m.hasMatch()) return download(socket, request, m.captured(1), m.captured(2));
    if (const auto m = project.match(path); m.hasMatch()) return pypiProject(socket, m.captured(1));
    if (const auto m = package.match(path); m.hasMatch() && wheels_.contains(m.captured(1)))
        return serveFile(socket, request, wheels_[m.captured(1)].file.data);
    reply(socket, 404, R"({"error":"Not Found"})");
}

void FakeHub::listing(QTcpSocket* socket, const QString& repository) {
    if (!repos_.contains(repository)) return reply(socket, 404, R"({"error":"Repository not found"})");
    QJsonArray entries;
    for (auto it = repos_[repository].cbegin(); it != repos_[repository].cend(); ++it) {
        const QString sha = it->advertisedSha.isEmpty() ? sha256Of(it->data) : it->advertisedSha;
        entries.append(QJsonObject{{"type", "file"},
                                   {"oid", "0123456789abcdef0123456789abcdef01234567"},  // git blob id of the pointer
                                   {"size", double(it->data.size())},
                                   {"path", it.key()},
                                   {"lfs", QJsonObject{{"oid", sha}, {"size", double(it->data.size())}, {"pointerSize", 134}}}});
    }
    entries.append(QJsonObject{{"type", "file"}, {"oid", "abc"}, {"size", 12}, {"path", "README.md"}});
    entries.append(QJsonObject{{"type", "directory"}, {"oid", "def"}, {"size", 0}, {"path", "extra.gguf"}});
    reply(socket, 200, QJsonDocument(entries).toJson(QJsonDocument::Compact), {"Content-Type: application/json"});
}

void FakeHub::download(QTcpSocket* socket, const Request& request, const QString& repository, const QString& path) {
    if (!repos_.contains(repository) || !repos_[repository].contains(path))
        return reply(socket, 404, "Entry not found", {"X-Error-Code: EntryNotFound"});
    if (gated_.contains(repository)) {
        const QByteArray auth = request.headers.value("authorization");
        if (auth == QByteArray("Bearer ") + kNoAccessToken) return reply(socket, 403, "Access to this repository is restricted");
        if (auth != QByteArray("Bearer ") + kGoodToken) return reply(socket, 401, "Access denied", {"X-Error-Code: GatedRepo"});
    }
    serveFile(socket, request, repos_[repository][path].data);
}

void FakeHub::pypiProject(QTcpSocket* socket, const QString& project) {
    QJsonObject releases;
    for (auto it = wheels_.cbegin(); it != wheels_.cend(); ++it) {
        if (it->project != project) continue;
        const QString sha = it->file.advertisedSha.isEmpty() ? sha256Of(it->file.data) : it->file.advertisedSha;
        QJsonArray files = releases.value(it->version).toArray();
        files.append(QJsonObject{{"filename", it.key()},
                                 {"packagetype", "bdist_wheel"},
                                 {"url", baseUrl().toString() + "/packages/" + it.key()},
                                 {"digests", QJsonObject{{"md5", "0123"}, {"sha256", sha}}},
                                 {"size", double(it->file.data.size())}});
        releases[it->version] = files;
    }
    if (releases.isEmpty()) return reply(socket, 404, R"({"message":"Not Found"})");
    const QJsonObject answer{{"info", QJsonObject{{"name", project}}}, {"releases", releases}, {"urls", QJsonArray{}}};
    reply(socket, 200, QJsonDocument(answer).toJson(QJsonDocument::Compact), {"Content-Type: application/json"});
}

void FakeHub::serveFile(QTcpSocket* socket, const Request& request, const QByteArray& data) {
    const QByteArray etag = "\"" + sha256Of(data).toLatin1() + "\"";
    QList<QByteArray> headers{"ETag: " + etag, "Accept-Ranges: bytes"};
    static const QRegularExpression rangeSpec(QStringLiteral("^bytes=(\\d+)-$"));
    const auto range = rangeSpec.match(QString::fromLatin1(request.headers.value("range")));
    const bool sameFile = !request.headers.contains("if-range") || request.headers.value("if-range") == etag;
    qint64 from = 0;
    int status = 200;
    if (range.hasMatch() && sameFile && !ignoreRanges_) {
        from = range.captured(1).toLongLong();
        if (from >= data.size()) return reply(socket, 416, {}, {"Content-Range: bytes */" + QByteArray::number(data.size())});
        status = 206;
        headers << "Content-Range: bytes " + QByteArray::number(from) + "-" + QByteArray::number(data.size() - 1) + "/" +
                       QByteArray::number(data.size());
    }
    const QByteArray body = data.mid(from);
    headers << "Content-Length: " + QByteArray::number(body.size());
    QByteArray head = "HTTP/1.1 " + QByteArray::number(status) + " " + statusText(status) + "\r\nConnection: close\r\n";
    for (const QByteArray& h : headers) head += h + "\r\n";
    socket->write(head + "\r\n");
    sendBody(socket, body, std::exchange(interruptAfter_, -1));
}

void FakeHub::reply(QTcpSocket* socket, int status, const QByteArray& body, const QList<QByteArray>& headers) {
    QByteArray head = "HTTP/1.1 " + QByteArray::number(status) + " " + statusText(status) +
                      "\r\nConnection: close\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n";
    for (const QByteArray& h : headers) head += h + "\r\n";
    socket->write(head + "\r\n" + body);
    socket->disconnectFromHost();
}

void FakeHub::sendBody(QTcpSocket* socket, QByteArray body, qint64 stopAfter) {
    if (stopAfter >= 0 && stopAfter < body.size()) body.truncate(stopAfter);
    if (bytesPerTick_ <= 0) {
        socket->write(body);
        socket->disconnectFromHost();
        return;
    }
    auto* timer = new QTimer(socket);
    auto sent = std::make_shared<qint64>(0);
    QPointer<QTcpSocket> guard(socket);
    connect(timer, &QTimer::timeout, socket, [=, this] {
        if (!guard || guard->state() != QAbstractSocket::ConnectedState) return timer->stop();
        const QByteArray slice = body.mid(*sent, bytesPerTick_);
        guard->write(slice);
        *sent += slice.size();
        if (*sent >= body.size()) {
            timer->stop();
            guard->disconnectFromHost();
        }
    });
    timer->start(tickMs_);
}

} // namespace arbor::test
