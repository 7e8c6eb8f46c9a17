// The block list a reply's markdown view repeats over: as markdown grows the way a
// streaming reply does, only the rows that changed are reported (so the view keeps the
// items of finished blocks), and the rows always equal a fresh split. Checked under
// QAbstractItemModelTester.
#include "markdown_block_model.h"
#include "markdown_test_text.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>

using arbor::app::MarkdownBlock;
using arbor::app::MarkdownBlockModel;

namespace {

QString row(const QString& kind, const QString& language, const QString& text) {
    return QStringLiteral("%1[%2]{%3}").arg(kind, language, text);
}

QStringList rows(const MarkdownBlockModel& model) {
    QStringList out;
    for (int i = 0; i < model.rowCount(); ++i) {
        const QModelIndex at = model.index(i);
        out << row(at.data(MarkdownBlockModel::KindRole).toString(), at.data(MarkdownBlockModel::LanguageRole).toString(),
                   at.data(MarkdownBlockModel::TextRole).toString());
    }
    return out;
}

QStringList rows(const QList<MarkdownBlock>& blocks) {
    QStringList out;
    for (const MarkdownBlock& b : blocks)
        out << row(b.kind == MarkdownBlock::Kind::Code ? QStringLiteral("code") : QStringLiteral("text"), b.language, b.text);
    return out;
}

// What the model reports for one change.
struct Report {
    QList<QPair<int, int>> changed, inserted, removed;
    int resets = 0;
};

class Recorder {
public:
    explicit Recorder(MarkdownBlockModel& model) {
        QObject::connect(&model, &QAbstractItemModel::dataChanged, &context_,
                         [this](const QModelIndex& a, const QModelIndex& b) { report.changed.push_back({a.row(), b.row()}); });
        QObject::connect(&model, &QAbstractItemModel::rowsInserted, &context_,
                         [this](const QModelIndex&, int a, int b) { report.inserted.push_back({a, b}); });
        QObject::connect(&model, &QAbstractItemModel::rowsRemoved, &context_,
                         [this](const QModelIndex&, int a, int b) { report.removed.push_back({a, b}); });
        QObject::connect(&model, &QAbstractItemModel::modelReset, &context_, [this] { ++report.resets; });
    }
    Report take() { return std::exchange(report, {}); }
    Report report;

private:
    QObject context_;
};

using Span = QList<QPair<int, int>>;

} // namespace

class TestMarkdownBlockModel : public QObject {
    Q_OBJECT

private slots:
    void roles() {
        MarkdownBlockModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMarkdown(QStringLiteral("Intro.\n\n```py\nx = 1\n```"));
        QCOMPARE(rows(model), (QStringList{"text[]{Intro.}", "code[py]{x = 1}"}));
        const QHash<int, QByteArray> names = model.roleNames();
        QCOMPARE(names.value(MarkdownBlockModel::KindRole), QByteArray("kind"));
        QCOMPARE(names.value(MarkdownBlockModel::TextRole), QByteArray("text"));
        QCOMPARE(names.value(MarkdownBlockModel::LanguageRole), QByteArray("language"));
    }

    // A reply streamed piece by piece: each step reports only the last block's change or
    // the new blocks; never a reset, never a change to a finished block.
    void streamingReportsOnlyWhatChanged() {
        MarkdownBlockModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        Recorder recorder(model);
        QSignalSpy count(&model, &MarkdownBlockModel::countChanged);

        model.setMarkdown(QStringLiteral("First"));
        Report r = recorder.take();
        QCOMPARE(r.inserted, (Span{{0, 0}}));
        QVERIFY(r.changed.isEmpty());

        model.setMarkdown(QStringLiteral("First para"));
        r = recorder.take();
        QCOMPARE(r.changed, (Span{{0, 0}}));
        QVERIFY(r.inserted.isEmpty() && r.removed.isEmpty());

        model.setMarkdown(QStringLiteral("First para.\n\nSecond"));
        r = recorder.take();
        QCOMPARE(r.changed, (Span{{0, 0}}));  // "First para" gained its full stop
        QCOMPARE(r.inserted, (Span{{1, 1}}));

        model.setMarkdown(QStringLiteral("First para.\n\nSecond one.\n```c\nint"));
        r = recorder.take();
        QCOMPARE(r.changed, (Span{{1, 1}}));
        QCOMPARE(r.inserted, (Span{{2, 2}}));

        model.setMarkdown(QStringLiteral("First para.\n\nSecond one.\n```c\nint a;\n"));
        r = recorder.take();
        QCOMPARE(r.changed, (Span{{2, 2}}));  // only the code block grew
        QVERIFY(r.inserted.isEmpty() && r.removed.isEmpty());
        QCOMPARE(rows(model), (QStringList{"text[]{First para.}", "text[]{Second one.}", "code[c]{int a;\n}"}));
        QCOMPARE(r.resets, 0);
        QCOMPARE(count.size(), 3);
    }

    // The sample reply (headings, lists, a table, fences of every kind) streamed in
    // pieces of every size, fences cut between their backticks: after each piece the rows
    // are a fresh split of the text so far, no row is removed and nothing reset, and only
    // the rows that were still open (the last two at most) change.
    // The pieces come as the whole text so far (setMarkdown) or as themselves (append).
    void streamingEqualsAFreshSplit_data() {
        QTest::addColumn<QStringList>("pieces");
        QTest::addColumn<bool>("byAppends");
        const QString reply = arbor::test::sampleReply();
        for (const bool byAppends : {false, true}) {
            const char* feed = byAppends ? "appended" : "whole text";
            for (const int size : {1, 2, 3, 5, 8, 13, 64})
                QTest::addRow("%s, pieces of %d", feed, size) << arbor::test::piecesOf(reply, size) << byAppends;
            QTest::addRow("%s, words", feed) << arbor::test::piecesLikeWords(reply) << byAppends;
            QTest::addRow("%s, fences cut after two backticks", feed)
                << arbor::test::piecesSplittingFences(reply) << byAppends;
            QTest::addRow("%s, all at once", feed) << QStringList{reply} << byAppends;
        }
    }

    void streamingEqualsAFreshSplit() {
        QFETCH(QStringList, pieces);
        QFETCH(bool, byAppends);
        MarkdownBlockModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        Recorder recorder(model);
        QString text;
        for (const QString& piece : pieces) {
            const int before = model.rowCount();
            text += piece;
            if (byAppends)
                model.append(piece);
            else
                model.setMarkdown(text);
            const Report r = recorder.take();
            QCOMPARE(r.resets, 0);
            QVERIFY2(r.removed.isEmpty(), qPrintable(QStringLiteral("a row removed after: %1").arg(text.right(40))));
            for (const auto& [first, last] : r.changed)
                QVERIFY2(first >= before - 2, qPrintable(QStringLiteral("row %1 of %2 changed").arg(first).arg(before)));
            QCOMPARE(rows(model), rows(arbor::app::splitMarkdown(text)));
            QCOMPARE(model.markdown(), text);
        }
        QCOMPARE(model.rowCount(), 15);  // the blocks of reply.md, counted by hand
    }

    // The one line that can undo a block its beginning opened: a backtick fence's info
    // string gaining a backtick makes the line prose again, so the code row goes.
    void aBacktickInAFencesInfoStringUndoesTheCodeBlock() {
        MarkdownBlockModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMarkdown(QStringLiteral("Text\n```a"));
        QCOMPARE(rows(model), (QStringList{"text[]{Text}", "code[a]{}"}));
        model.setMarkdown(QStringLiteral("Text\n```a`"));
        QCOMPARE(rows(model), (QStringList{"text[]{Text\n```a`}"}));
        model.setMarkdown(QStringLiteral("Text\n```a`\nmore"));
        QCOMPARE(rows(model), (QStringList{"text[]{Text\n```a`\nmore}"}));
    }

    // A row keeps the height measured for its item, at the width it was measured at,
    // until its text changes.
    void measuredHeightsLastUntilTheirBlockChanges() {
        MarkdownBlockModel model;
        model.setMarkdown(QStringLiteral("First.\n\nSecond"));
        QCOMPARE(model.measuredHeight(0, 500), -1.0);
        model.setMeasuredHeight(0, 500, 30);
        model.setMeasuredHeight(1, 500, 40);
        QCOMPARE(model.measuredHeight(0, 500), 30.0);
        QCOMPARE(model.measuredHeight(0, 400), -1.0);
        qreal width = 0;
        QCOMPARE(model.lastHeight(0, &width), 30.0);
        QCOMPARE(width, 500.0);
        model.append(u" one.");
        QCOMPARE(model.measuredHeight(0, 500), 30.0);
        QCOMPARE(model.measuredHeight(1, 500), -1.0);
        QCOMPARE(model.lastHeight(1, &width), -1.0);
    }

    // Any other change (an edit, a shorter text) still ends as a fresh split would.
    void otherChangesEndAsAFreshSplit() {
        MarkdownBlockModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        Recorder recorder(model);
        model.setMarkdown(QStringLiteral("A.\n\nB.\n\nC.\n\nD."));
        recorder.take();
        model.setMarkdown(QStringLiteral("A.\n\nX.\n\nC."));
        Report r = recorder.take();
        QCOMPARE(r.removed, (Span{{3, 3}}));
        QCOMPARE(r.changed, (Span{{1, 1}}));
        QCOMPARE(rows(model), (QStringList{"text[]{A.}", "text[]{X.}", "text[]{C.}"}));
        model.setMarkdown(QString());
        QCOMPARE(model.rowCount(), 0);
        model.setMarkdown(QStringLiteral("```\nx\n```"));
        QCOMPARE(rows(model), (QStringList{"code[]{x}"}));
    }
};

QTEST_GUILESS_MAIN(TestMarkdownBlockModel)
#include "test_markdown_block_model.moc"
