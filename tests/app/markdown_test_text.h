// The reply the markdown tests stream (tests/data/markdown/reply.md) and the ways they
// cut it into pieces, as a model's tokens would arrive.
#pragma once

#include "test_support.h"

#include <QFile>
#include <QStringList>

namespace arbor::test {

inline QString sampleReply() {
    QFile file(QString::fromStdString((test_data_dir() / "markdown" / "reply.md").string()));
    if (!file.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(file.fileName()));
    return QString::fromUtf8(file.readAll());
}

// `text` in pieces of `size` characters.
inline QStringList piecesOf(const QString& text, qsizetype size) {
    QStringList pieces;
    for (qsizetype at = 0; at < text.size(); at += size) pieces << text.mid(at, size);
    return pieces;
}

// `text` cut before every space and newline, as a tokenizer cuts words.
inline QStringList piecesLikeWords(const QString& text) {
    QStringList pieces;
    qsizetype from = 0;
    for (qsizetype at = 1; at < text.size(); ++at) {
        if (text[at] == QLatin1Char(' ') || text[at] == QLatin1Char('\n')) {
            pieces << text.mid(from, at - from);
            from = at;
        }
    }
    pieces << text.mid(from);
    return pieces;
}

// `text` cut after the first two characters of every run of three backticks or tildes,
// so that each fence arrives as "``" and then "`...".
inline QStringList piecesSplittingFences(const QString& text) {
    QStringList pieces;
    qsizetype from = 0;
    for (qsizetype at = 2; at < text.size(); ++at) {
        const QChar c = text[at - 2];
        if ((c == QLatin1Char('`') || c == QLatin1Char('~')) && text[at - 1] == c && text[at] == c &&
            (at < 3 || text[at - 3] != c)) {
            pieces << text.mid(from, at - from);
            from = at;
        }
    }
    pieces << text.mid(from);
    return pieces;
}

} // namespace arbor::test
