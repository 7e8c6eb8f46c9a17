// The conversation view model: loads a path, switches branches, grows a streaming
// reply; checked by QAbstractItemModelTester throughout.
#include "message_enums.h"
#include "message_list_model.h"
#include "markdown_block_model.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using arbor::app::MessageListModel;
using arbor::app::MessageRow;
using arbor::app::StoreService;
using R = MessageListModel::Roles;
using MessageRole = arbor::app::qml::MessageRole::Value;
using MessageState = arbor::app::qml::MessageState::Value;

namespace {

// What QML gets for a row, as the type QML compares with (an invalid value when the
// model answers with another type, text for instance).
template <class T>
T typed(const MessageListModel& m, int row, int role) {
    const QVariant v = m.data(m.index(row), role);
    return v.metaType() == QMetaType::fromType<T>() ? v.value<T>() : T(-1);
}
MessageRole roleOf(const MessageListModel& m, int row) { return typed<MessageRole>(m, row, R::RoleRole); }
MessageState stateOf(const MessageListModel& m, int row) { return typed<MessageState>(m, row, R::StateRole); }
arbor::app::ReplyStats statsOf(const MessageListModel& m, int row) {
    const QVariant v = m.data(m.index(row), R::StatsRole);
    return v.metaType() == QMetaType::fromType<arbor::app::ReplyStats>() ? v.value<arbor::app::ReplyStats>()
                                                                           : arbor::app::ReplyStats{};
}
std::vector<std::int32_t> ids_(std::initializer_list<std::int32_t> v) { return v; }

// A model on its own store service, checked by a tester throughout.
struct Viewer {
    StoreService service;
    MessageListModel model{service};
    QAbstractItemModelTester tester{&model, QAbstractItemModelTester::FailureReportingMode::Fatal};
    QSignalSpy loaded{&model, &MessageListModel::loaded};

    explicit Viewer(const std::filesystem::path& file) : service(file) { service.open(); }
    // Shows the branch through `from` (0: the latest); false when no answer came.
    bool show(qint64 conversation, qint64 from = 0) {
        model.load(conversation, from);
        return loaded.wait(10000);
    }
};
} // namespace

class TestMessageListModel : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    qint64 conv_ = 0;
    arbor::MessageId sys_ = 0, u1_ = 0, a1_ = 0, a1b_ = 0, a1c_ = 0, u2_ = 0, a2_ = 0;

    std::filesystem::path file() const { return std::filesystem::path(dir_.path().toStdString()) / "arbor.db"; }

    QList<qint64> ids(const MessageListModel& m) const {
        QList<qint64> out;
        for (int i = 0; i < m.rowCount(); ++i) out << m.data(m.index(i), R::IdRole).toLongLong();
        return out;
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        arbor::Store store(file());
        conv_ = store.create_conversation("Branches");
        sys_ = store.add_message(conv_, std::nullopt, arbor::Role::System, "Be brief.", {});
        u1_ = store.add_message(conv_, sys_, arbor::Role::User, "Name a river.", ids_({1, 2}));
        a1_ = store.add_message(conv_, u1_, arbor::Role::Assistant, "The Rhine.", ids_({3}));
        u2_ = store.add_message(conv_, a1_, arbor::Role::User, "Longer?", ids_({4}));
        a2_ = store.add_message(conv_, u2_, arbor::Role::Assistant, "The Danube.", ids_({5}));
        a1b_ = store.add_message(conv_, u1_, arbor::Role::Assistant, "The Seine.", ids_({6}));
        a1c_ = store.add_message(conv_, u1_, arbor::Role::Assistant, "The Elbe.", ids_({7}), arbor::MessageState::streaming);
        store.finish_message(a1c_, arbor::MessageState::stopped, {});
    }

    void loadsTheLatestPathAndNavigatesBranches() {
        StoreService service(file());
        MessageListModel model(service);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
        QSignalSpy loaded(&model, &MessageListModel::loaded);
        QSignalSpy conversation(&model, &MessageListModel::conversationChanged);
        service.open();
        model.load(conv_);
        QVERIFY(loaded.wait(10000));
        QCOMPARE(conversation.size(), 1);
        QCOMPARE(model.conversationId(), conv_);
        QCOMPARE(ids(model), (QList<qint64>{sys_, u1_, a1c_}));
        const QModelIndex reply = model.index(2);
        QCOMPARE(roleOf(model, 2), MessageRole::Assistant);
        QCOMPARE(model.data(reply, R::TextRole).toString(), QString("The Elbe."));
        QCOMPARE(stateOf(model, 2), MessageState::Stopped);
        QCOMPARE(model.data(reply, R::BranchIndexRole).toInt(), 2);
        QCOMPARE(model.data(reply, R::BranchCountRole).toInt(), 3);
        QCOMPARE(roleOf(model, 0), MessageRole::System);

        model.nextBranch(2);  // already the last sibling: nothing happens
        QVERIFY(!loaded.wait(300));
        model.previousBranch(2);
        QVERIFY(loaded.wait(10000));
        QCOMPARE(ids(model), (QList<qint64>{sys_, u1_, a1b_}));
        QCOMPARE(model.data(model.index(2), R::BranchIndexRole).toInt(), 1);
        model.previousBranch(2);
        QVERIFY(loaded.wait(10000));
        QCOMPARE(ids(model), (QList<qint64>{sys_, u1_, a1_, u2_, a2_}));
        QCOMPARE(model.data(model.index(4), R::TextRole).toString(), QString("The Danube."));
        model.previousBranch(2);
        QVERIFY(!loaded.wait(300));
        model.nextBranch(2);
        QVERIFY(loaded.wait(10000));
        QCOMPARE(ids(model), (QList<qint64>{sys_, u1_, a1b_}));

        model.load(conv_, a1_);  // from a given message to its newest leaf
        QVERIFY(loaded.wait(10000));
        QCOMPARE(ids(model), (QList<qint64>{sys_, u1_, a1_, u2_, a2_}));
        QCOMPARE(conversation.size(), 1);
    }

    void streamingReplyGrowsInPlace() {
        Viewer viewer(file());
        MessageListModel& model = viewer.model;
        QVERIFY(viewer.show(conv_, a1_));
        QCOMPARE(model.rowCount(), 5);

        MessageRow reply;
        reply.id = 9999;
        reply.parentId = a2_;
        reply.role = arbor::Role::Assistant;
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        model.appendMessage(reply);
        QCOMPARE(inserted.size(), 1);
        QCOMPARE(model.rowCount(), 6);
        model.startLive(9999);
        QCOMPARE(stateOf(model, 5), MessageState::Streaming);

        // A reply's markdown view follows the row by its pieces.
        arbor::app::MarkdownBlockModel blocks;
        blocks.setMessages(&model);
        blocks.setMessageId(9999);
        QSignalSpy appended(&model, &MessageListModel::textAppended);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.appendText(9999, "It is ");
        model.appendText(9999, "");
        model.appendText(9999, "2850 km long.");
        model.appendText(4242, "nobody");
        QCOMPARE(changed.size(), 2);
        QCOMPARE(changed.at(0).at(0).value<QModelIndex>().row(), 5);
        QVERIFY(changed.at(0).at(2).value<QList<int>>().contains(R::TextRole));
        QCOMPARE(model.data(model.index(5), R::TextRole).toString(), QString("It is 2850 km long."));
        QCOMPARE(appended.size(), 2);
        QCOMPARE(appended.at(1).at(0).toLongLong(), 9999);
        QCOMPARE(appended.at(1).at(1).toString(), QString("2850 km long."));
        QCOMPARE(blocks.markdown(), QString("It is 2850 km long."));
        QCOMPARE(blocks.rowCount(), 1);

        arbor::app::ReplyStats stats;
        stats.tokensPerSecond = 42.0;
        model.setFinished(9999, arbor::MessageState::complete, stats);
        QCOMPARE(stateOf(model, 5), MessageState::Complete);
        QCOMPARE(statsOf(model, 5).tokensPerSecond, 42.0);
        QCOMPARE(model.data(model.index(4), R::TextRole).toString(), QString("The Danube."));
    }

    // A reply that reasons first: the reasoning and answer roles split its text as it
    // streams, and its markdown view follows the answer alone. A user's text is not split.
    void aReasoningReplyShowsItsAnswerApart() {
        Viewer viewer(file());
        MessageListModel& model = viewer.model;
        QVERIFY(viewer.show(conv_, a1_));
        const int at = model.rowCount();
        MessageRow question;
        question.id = 7000;
        question.text = "<think>not reasoning</think> but a question";
        model.appendMessage(question);
        QCOMPARE(model.data(model.index(at), R::AnswerRole).toString(), question.text);
        QVERIFY(model.data(model.index(at), R::ReasoningRole).toString().isEmpty());

        MessageRow reply;
        reply.id = 7001;
        reply.role = arbor::Role::Assistant;
        model.appendMessage(reply);
        model.startLive(7001);
        arbor::app::MarkdownBlockModel blocks;
        blocks.setMessages(&model);
        blocks.setMessageId(7001);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        const QModelIndex row = model.index(at + 1);
        for (const char* piece : {"<", "think>", "Two and two.", "</", "think>", "\n\n", "It is ", "4."}) {
            model.appendText(7001, QString::fromLatin1(piece));
            QVERIFY2(!blocks.markdown().contains(u'<'), qPrintable(blocks.markdown()));
        }
        QCOMPARE(model.data(row, R::TextRole).toString(), QString("<think>Two and two.</think>\n\nIt is 4."));
        QCOMPARE(model.data(row, R::ReasoningRole).toString(), QString("Two and two."));
        QCOMPARE(model.data(row, R::AnswerRole).toString(), QString("It is 4."));
        QCOMPARE(blocks.markdown(), QString("It is 4."));
        // "Thinking" from the opening tag to the closing one.
        const auto rolesAt = [&](int i) { return changed.at(i).at(2).value<QList<int>>(); };
        QVERIFY(!rolesAt(0).contains(R::ReasoningOpenRole));
        QVERIFY(rolesAt(1).contains(R::ReasoningOpenRole));
        QVERIFY(!rolesAt(2).contains(R::ReasoningOpenRole) && rolesAt(2).contains(R::ReasoningRole));
        QVERIFY(rolesAt(4).contains(R::ReasoningOpenRole));
        QVERIFY(!rolesAt(6).contains(R::ReasoningRole) && rolesAt(6).contains(R::AnswerRole));
        QVERIFY(!model.data(row, R::ReasoningOpenRole).toBool());

        // A "</think>" opened by the prompt turns the text before it into reasoning: the
        // markdown view shows the answer after it, not the text it had.
        MessageRow second;
        second.id = 7002;
        second.role = arbor::Role::Assistant;
        model.appendMessage(second);
        model.startLive(7002);
        blocks.setMessageId(7002);
        QSignalSpy replaced(&model, &MessageListModel::answerReplaced);
        model.appendText(7002, "Hmm, four.");
        QCOMPARE(blocks.markdown(), QString("Hmm, four."));
        model.appendText(7002, "</think>Four.");
        QCOMPARE(replaced.size(), 1);
        QCOMPARE(blocks.markdown(), QString("Four."));
        model.setFinished(7002, arbor::MessageState::complete, {});
        QCOMPARE(model.data(model.index(at + 2), R::ReasoningRole).toString(), QString("Hmm, four."));

        // Where the prompt opened the <think> (DeepSeek-R1 distills), the session starts the
        // text with one: it is reasoning from its first piece, and the answer view never
        // shows it.
        MessageRow third;
        third.id = 7003;
        third.role = arbor::Role::Assistant;
        model.appendMessage(third);
        model.startLive(7003);
        blocks.setMessageId(7003);
        const QModelIndex opened = model.index(at + 3);
        model.appendText(7003, "<think>");
        QVERIFY(model.data(opened, R::ReasoningOpenRole).toBool());
        model.appendText(7003, "Hmm, five.");
        QCOMPARE(model.data(opened, R::ReasoningRole).toString(), QString("Hmm, five."));
        QVERIFY(model.data(opened, R::AnswerRole).toString().isEmpty());
        QVERIFY(blocks.markdown().isEmpty());
        model.appendText(7003, "</think>Five.");
        QCOMPARE(replaced.size(), 1);  // the answer only grew
        QVERIFY(!model.data(opened, R::ReasoningOpenRole).toBool());
        QCOMPARE(blocks.markdown(), QString("Five."));
        model.setFinished(7003, arbor::MessageState::complete, {});
        QCOMPARE(model.data(opened, R::TextRole).toString(), QString("<think>Hmm, five.</think>Five."));
        QCOMPARE(model.data(opened, R::ReasoningRole).toString(), QString("Hmm, five."));
        QCOMPARE(model.data(opened, R::AnswerRole).toString(), QString("Five."));
    }

    // The model owns the live reply: reading its branch again (a branch switch and back)
    // shows the row as streamed so far, not the store's copy, until the store has the
    // reply's end.
    void aLiveReplyOutlivesReadsOfItsBranch() {
        qint64 conv = 0, question = 0, answer = 0;
        {
            arbor::Store store(file());
            conv = store.create_conversation("Live");
            question = store.add_message(conv, std::nullopt, arbor::Role::User, "Count.", ids_({1}));
            answer = store.add_message(conv, question, arbor::Role::Assistant, "", {}, arbor::MessageState::streaming);
            store.append_to_message(answer, "One, ", ids_({2}));
        }
        Viewer viewer(file());
        MessageListModel& model = viewer.model;
        QVERIFY(viewer.show(conv));
        model.startLive(answer);
        model.appendText(answer, "two, three.");
        QVERIFY(viewer.show(conv));
        QCOMPARE(model.data(model.index(1), R::TextRole).toString(), QString("One, two, three."));
        QCOMPARE(stateOf(model, 1), MessageState::Streaming);

        arbor::app::ReplyStats stats;
        stats.finishReason = arbor::app::ReplyStats::FinishReason::Cancelled;
        model.setFinished(answer, arbor::MessageState::stopped, stats);
        QVERIFY(viewer.show(conv));
        QCOMPARE(stateOf(model, 1), MessageState::Stopped);
        QCOMPARE(statsOf(model, 1).finishReason, arbor::app::ReplyStats::FinishReason::Cancelled);

        model.releaseLive(answer);  // from now on the store's copy is the truth
        QVERIFY(viewer.show(conv));
        QCOMPARE(model.data(model.index(1), R::TextRole).toString(), QString("One, "));
    }

    void aTurnIsShownBelowItsParent() {
        Viewer viewer(file());
        MessageListModel& model = viewer.model;
        QVERIFY(viewer.show(conv_, a2_));
        QCOMPARE(ids(model), (QList<qint64>{sys_, u1_, a1_, u2_, a2_}));
        MessageRow edited, reply;
        edited.id = 7001;
        edited.parentId = a1_;
        reply.id = 7002;
        reply.parentId = 7001;
        reply.role = arbor::Role::Assistant;
        QVERIFY(model.showBelow(conv_, a1_, {edited, reply}));
        QCOMPARE(ids(model), (QList<qint64>{sys_, u1_, a1_, 7001, 7002}));
        QVERIFY(!model.showBelow(conv_, 4242, {reply}));  // not shown: nothing changes
        QCOMPARE(ids(model), (QList<qint64>{sys_, u1_, a1_, 7001, 7002}));
        QVERIFY(model.showBelow(conv_, 0, {edited}));
        QCOMPARE(ids(model), (QList<qint64>{7001}));
    }

    void answersForAnotherModelAreIgnored() {
        StoreService service(file());
        MessageListModel a(service), b(service);
        QSignalSpy loadedA(&a, &MessageListModel::loaded);
        QSignalSpy loadedB(&b, &MessageListModel::loaded);
        service.open();
        a.load(conv_, a1b_);
        b.load(conv_, a1_);
        QVERIFY(loadedB.wait(10000));
        QTRY_COMPARE_WITH_TIMEOUT(loadedA.size(), 1, 10000);
        QCOMPARE(loadedB.size(), 1);
        QCOMPARE(ids(a), (QList<qint64>{sys_, u1_, a1b_}));
        QCOMPARE(ids(b), (QList<qint64>{sys_, u1_, a1_, u2_, a2_}));
    }
};

QTEST_GUILESS_MAIN(TestMessageListModel)
#include "test_message_list_model.moc"
