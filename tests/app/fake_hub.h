// A stand-in for the Hugging Face Hub on loopback, for the download tests: a real HTTP/1.1
// server (QTcpServer) that answers the two requests Arbor makes, the tree listing
// (/api/models/{owner}/{name}/tree/main) and file downloads (/{owner}/{name}/resolve/main/
// {path}, any revision) with Range, If-Range and ETag, like the Hub. It can refuse (404,
// 401/403 for a gated repository), slow a transfer down, and cut one off part-way. It also
// stands in for PyPI: a project's JSON (/pypi/{project}/json) naming wheels it serves from
// /packages/{file}, with the same Range support.
#pragma once

#include <QByteArray>
#include <QMap>
#include <QObject>
#include <QSet>
#include <QTcpServer>
#include <QUrl>

class QTcpSocket;

namespace arbor::test {

class FakeHub : public QObject {
    Q_OBJECT
public:
    struct Request {
        QByteArray method, path;
        QMap<QByteArray, QByteArray> headers;  // names in lower case
    };
    // Tokens a gated repository accepts (200) and knows but refuses (403); any other is 401.
    static constexpr const char* kGoodToken = "hf_good";
    static constexpr const char* kNoAccessToken = "hf_no_access";

    FakeHub();
    QUrl baseUrl() const;

    void addFile(const QString& repository, const QString& path, const QByteArray& data);
    void setGated(const QString& repository) { gated_.insert(repository); }
    QByteArray fileData(const QString& repository, const QString& path) const {
        return repos_.value(repository).value(path).data;
    }
    // What the listing gives as the file's sha256 instead of the true one.
    void advertiseSha256(const QString& repository, const QString& path, const QString& sha256);
    // Replaces a file's bytes (a re-upload: new ETag).
    void replaceFile(const QString& repository, const QString& path, const QByteArray& data);

    // Publishes `wheel` on the fake PyPI as a file of `project`'s release `version`; the
    // JSON gives `advertisedSha256` as its digest when set, else the true one.
    void addWheel(const QString& project, const QString& version, const QString& file, const QByteArray& wheel,
                  const QString& advertisedSha256 = {});

    // Sends file bodies `bytesPerTick` bytes every `tickMs` (0: all at once).
    void throttle(int bytesPerTick, int tickMs = 10) { bytesPerTick_ = bytesPerTick; tickMs_ = tickMs; }
    // Closes the next file transfer once it has sent `bytes` bytes of the body.
    void interruptNextAfter(qint64 bytes) { interruptAfter_ = bytes; }
    void setIgnoreRanges(bool ignore) { ignoreRanges_ = ignore; }

    const QList<Request>& requests() const { return requests_; }
    QList<Request> fileRequests() const;  // the /resolve/ ones
    QList<Request> requestsUnder(const QByteArray& prefix) const;
    static QString sha256Of(const QByteArray& data);

private:
    struct File {
        QByteArray data;
        QString advertisedSha;
    };
    void newConnection();
    void handle(QTcpSocket* socket, const Request& request);
    void listing(QTcpSocket* socket, const QString& repository);
    void download(QTcpSocket* socket, const Request& request, const QString& repository, const QString& path);
    void pypiProject(QTcpSocket* socket, const QString& project);
    // Sends `data` as a file: ETag, Range and If-Range, throttling and interruption.
    void serveFile(QTcpSocket* socket, const Request& request, const QByteArray& data);
    void reply(QTcpSocket* socket, int status, const QByteArray& body, const QList<QByteArray>& headers = {});
    void sendBody(QTcpSocket* socket, QByteArray body, qint64 stopAfter);

    QTcpServer server_;
    QMap<QString, QMap<QString, File>> repos_;
    QSet<QString> gated_;
    struct Wheel {
        QString project, version;
        File file;
    };
    QMap<QString, Wheel> wheels_;  // by file name
    int bytesPerTick_ = 0;
    int tickMs_ = 10;
    qint64 interruptAfter_ = -1;
    bool ignoreRanges_ = false;
    QList<Request> requests_;
};

} // namespace arbor::test
