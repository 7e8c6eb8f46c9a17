// A loopback HTTP server for the failures a real server shows only by chance: each
// connection is answered with the same fixed bytes once its request has arrived (or
// never answered at all), then closed or left open. It stands for a stalled server, an
// error status and a stream cut off before its end.
#pragma once

#include <QByteArray>
#include <QHostAddress>
#include <QList>
#include <QPointer>
#include <QTcpServer>
#include <QTcpSocket>

class ScriptedHttpServer : public QObject {
public:
    // `answer`: the bytes sent once a request's headers and body arrived; empty: nothing is
    // ever sent. `close`: the connection is closed after the answer.
    ScriptedHttpServer(QByteArray answer, bool close) : answer_(std::move(answer)), close_(close) {
        connect(&server_, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket* socket = server_.nextPendingConnection()) {
                sockets_.append(socket);
                connect(socket, &QTcpSocket::readyRead, socket, [this, socket] { onRequest(socket); });
            }
        });
        server_.listen(QHostAddress::LocalHost);
    }
    quint16 port() const { return server_.serverPort(); }
    int requests() const { return requests_; }
    // The body of the latest whole request.
    QByteArray lastBody() const { return lastBody_; }

private:
    void onRequest(QTcpSocket* socket) {
        received_ += socket->readAll();
        const qsizetype end = received_.indexOf("\r\n\r\n");
        if (end < 0) return;
        const qsizetype length = received_.toLower().indexOf("content-length:");
        const qsizetype body = length < 0 ? 0 : received_.mid(length + 15, received_.indexOf('\r', length) - length - 15).trimmed().toLongLong();
        if (received_.size() < end + 4 + body) return;
        lastBody_ = received_.mid(end + 4, body);
        received_.clear();
        ++requests_;
        if (answer_.isEmpty()) return;
        socket->write(answer_);
        if (close_) socket->disconnectFromHost();
    }

    QTcpServer server_;
    QList<QPointer<QTcpSocket>> sockets_;  // kept open until the server goes
    QByteArray received_;
    QByteArray answer_;
    QByteArray lastBody_;
    bool close_;
    int requests_ = 0;
};
