// Restored tabs are warmed at start, in the real window (offscreen) with the default
// model and the KV disk tier in a cache directory of the test's own (under the build
// directory's test cache): after a restart a conversation's history is read back from
// disk by its tab's warm-up, so the first follow-up computes only its own words and its
// stats line says where its prompt tokens came from; a follow-up sent while the warm-ups
// of other tabs still run goes first; a closed tab's warm-up is cancelled; and the
// start-up guard stays armed until the warm-ups are done.
#include "test_support.h"
#include "window_test_support.h"

#include "arbor/store.h"

#include <QSignalSpy>
#include <QtTest>

#include <filesystem>
#include <set>

using namespace arbor::app;
using arbor::test::findItem;
using arbor::test::startWithModel;
using arbor::test::typeAndSend;
using arbor::test::visibleItems;

namespace {

constexpr int kModelWaitMs = 120000;

// About `sentences` sentences of plain prose (roughly 13 tokens each).
std::string prose(int sentences, const char* topic) {
    std::string text;
    for (int i = 0; i < sentences; ++i)
        text += "Sentence " + std::to_string(i) + " is about " + topic + " and how it changes over the years. ";
    return text;
}

// Page files the disk tier holds under $XDG_CACHE_HOME/arbor/kv.
int kvFiles() {
    const std::filesystem::path dir = std::filesystem::path(qEnvironmentVariable("XDG_CACHE_HOME").toStdString()) / "arbor" / "kv";
    std::error_code ec;
    int n = 0;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
        n += it->path().extension() == ".kvp";
    return n;
}

bool startupMarkerSet(const std::filesystem::path& db) {
    return arbor::Store(db).app_setting(ArborApp::kStartupMarkerKey).has_value();
}

std::optional<arbor::app::ReplyStats> lastReplyStats(ChatSession* session) {
    MessageListModel* m = session->messages();
    if (m->rowCount() == 0) return {};
    const MessageRow& row = m->row(m->rowCount() - 1);
    if (row.role != arbor::Role::Assistant || row.state != arbor::MessageState::complete) return {};
    return row.stats;
}

} // namespace

class TestTabWarmup : public QObject {
    Q_OBJECT
private slots:
    void restoredTabContinuesFromDisk();
    void followUpGoesBeforeOtherTabsWarmUps();
};

// A conversation, a restart, then a follow-up: the restored tab's warm-up reads the
// history's pages from disk (none computed but the unfinished last page and the next
// user header), and the follow-up finds all of the warm-up's prompt in memory.
void TestTabWarmup::restoredTabContinuesFromDisk() {
    ARBOR_REQUIRE_MODEL();
    const arbor::test::TemporaryDatabase db;
    {
        arbor::test::AppWindow running(db.path());
        startWithModel(running);
        if (QTest::currentTestFailed()) return;
        ArborApp& app = running.app;
        QCOMPARE(app.settings()->kvDiskMiB(), AppSettings::kDefaultKvDiskMiB);  // on by default
        QCOMPARE(QString::fromStdString(app.model()->current()->engine->disk_tier_off_reason()), QString());
        QTest::keyClick(running.window, Qt::Key_N, Qt::ControlModifier);
        QTRY_VERIFY(app.tabs()->current());
        ChatSession* session = app.tabs()->current();
        QVERIFY(session->saveSettings({{"maxTokens", 8}}).isEmpty());
        QQuickItem* input = findItem(running.window, QStringLiteral("composerInput"));
        QVERIFY(input);
        input->setProperty("text", QString::fromStdString(prose(12, "the sea") + "\nSum it up."));
        QTRY_VERIFY(input->hasActiveFocus());
        QTest::keyClick(running.window, Qt::Key_Return);
        QTRY_VERIFY_WITH_TIMEOUT(lastReplyStats(session).has_value(), kModelWaitMs);
        QVERIFY(lastReplyStats(session)->promptTokens > 100);
    }  // closing writes the cached pages to disk
    QVERIFY2(kvFiles() > 0, "no KV page was written to disk at shutdown");

    arbor::test::AppWindow running(db.path());
    ArborApp& app = running.app;
    QSignalSpy warmed(app.warmer(), &TabWarmer::finished);
    QSignalSpy settled(app.warmer(), &TabWarmer::settled);
    bool markerAtSettle = false;
    connect(app.warmer(), &TabWarmer::settled, this, [&] { markerAtSettle = startupMarkerSet(db.path()); });
    startWithModel(running);
    if (QTest::currentTestFailed()) return;
    QTRY_COMPARE_WITH_TIMEOUT(warmed.size(), 1, kModelWaitMs);
    const auto warm = warmed[0][1].value<ReplyStats>();
    QCOMPARE(warm.finishReason, ReplyStats::FinishReason::Length);  // warmed, nothing generated
    QVERIFY2(warm.diskTokens > 0 && warm.diskTokens == warm.cachedTokens && warm.promptTokens - warm.cachedTokens < 32,
             qPrintable(QString("warm-up: %1 prompt tokens, %2 cached, %3 from disk")
                            .arg(warm.promptTokens).arg(warm.cachedTokens).arg(warm.diskTokens)));
    QCOMPARE(warm.generatedTokens, 0);
    // The guard stayed armed while the warm-up ran, and is cleared after.
    QTRY_COMPARE(settled.size(), 1);
    QVERIFY2(markerAtSettle, "the start-up marker was cleared before the warm-ups were done");
    QTRY_VERIFY_WITH_TIMEOUT(!startupMarkerSet(db.path()), 5 * ArborApp::kStartupSettleMs);

    ChatSession* session = app.tabs()->current();
    QVERIFY(session);
    QCOMPARE(session->messages()->rowCount(), 2);  // the warm-up shows nowhere as a reply
    typeAndSend(running.window, QStringLiteral("And then?"));
    QTRY_VERIFY_WITH_TIMEOUT(session->messages()->rowCount() == 4 && lastReplyStats(session).has_value(), kModelWaitMs);
    const arbor::app::ReplyStats stats = *lastReplyStats(session);
    const int prompt = stats.promptTokens, cached = stats.cachedTokens;
    QCOMPARE(cached, warm.promptTokens);  // the whole history, from memory
    QCOMPARE(std::max(stats.diskTokens, 0), 0);
    QVERIFY2(prompt - cached < 16, qPrintable(QString("computed %1 of %2").arg(prompt - cached).arg(prompt)));

    // The stats line under it tells the split.
    const QString expected = QString("%1 prompt tokens: %2 from memory, 0 from disk, %3 computed")
                                 .arg(prompt).arg(cached).arg(prompt - cached);
    const auto shown = [&] {
        QStringList texts;
        for (QQuickItem* label : visibleItems(running.window, QStringLiteral("statsLabel")))
            texts << label->property("text").toString();
        return texts;
    };
    QTRY_VERIFY2(shown().filter(expected).size() == 1, qPrintable(shown().join(" | ") + " lacks " + expected));
}

// Four restored tabs of long histories, the disk tier off so every warm-up computes its
// prompt (one at a time, the current tab's first). A follow-up sent in the last tab while
// the first two tabs' warm-ups are still to finish has its first token before them (at
// most the one in the step being run when it came may finish first), though they came
// first and nothing of its history is cached; closing a tab cancels its warm-up.
void TestTabWarmup::followUpGoesBeforeOtherTabsWarmUps() {
    ARBOR_REQUIRE_MODEL();
    const arbor::test::TemporaryDatabase db;
    std::vector<qint64> conversations;
    {
        arbor::Store store(db.path());
        store.set_app_setting("engine.kv_disk_mib", "0");
        std::vector<arbor::OpenTab> tabs;
        for (const char* topic : {"rivers", "mountains", "forests", "deserts"}) {
            const auto c = store.create_conversation(topic);
            const auto q = store.add_message(c, std::nullopt, arbor::Role::User, prose(30, topic) + "Tell me about it.", {});
            const auto a = store.add_message(c, q, arbor::Role::Assistant, prose(8, topic), {});
            arbor::ConversationSettings short_replies;
            short_replies.max_tokens = 4;
            store.set_conversation_settings(c, short_replies);
            tabs.push_back({c, a, tabs.empty()});
            conversations.push_back(c);
        }
        store.save_open_tabs(tabs);
    }
    arbor::test::AppWindow running(db.path());
    ArborApp& app = running.app;
    // The events of the warm-ups' and the follow-up's Replies, in the order the GUI
    // thread got them.
    struct Seen {
        quint64 id;
        bool token;
        ReplyStats::FinishReason reason;
    };
    std::vector<Seen> events;
    const auto observe = [&](Reply* reply) {
        const quint64 id = reply->id();
        connect(reply, &Reply::token, this, [&events, id] { events.push_back({id, true, {}}); });
        connect(reply, &Reply::finished, this, [&events, id](const ReplyStats& stats) {
            events.push_back({id, false, stats.finishReason});
        });
    };
    QSignalSpy settled(app.warmer(), &TabWarmer::settled);
    bool markerAtSettle = false;
    connect(app.warmer(), &TabWarmer::settled, this, [&] { markerAtSettle = startupMarkerSet(db.path()); });
    QHash<qint64, quint64> warmUps;  // conversation -> its warm-up's request
    connect(app.warmer(), &TabWarmer::started, this, [&](qint64 c, Reply* reply) {
        warmUps.insert(c, reply->id());
        observe(reply);
    });
    // The moment the last warm-up is submitted (the current tab's runs, the others wait),
    // the user switches to the last tab, whose warm-up has not run, and sends a follow-up
    // there (as the composer sends it), then closes the third tab.
    ChatSession* session = nullptr;
    size_t sentAt = 0;
    std::set<quint64> outstanding;  // the first two tabs' warm-ups, unless finished by then
    connect(app.warmer(), &TabWarmer::started, this, [&] {
        if (warmUps.size() != 4) return;
        sentAt = events.size();
        outstanding = {warmUps[conversations[0]], warmUps[conversations[1]]};
        for (const Seen& e : events)
            if (!e.token) outstanding.erase(e.id);
        QCOMPARE(app.tabs()->rowCount(), 4);
        app.tabs()->setCurrentIndex(3);
        session = app.tabs()->current();
        connect(session, &ChatSession::requestStarted, this, observe);
        QVERIFY(session->send(QStringLiteral("More?")));
        app.tabs()->closeTab(2);
    });
    startWithModel(running);
    if (QTest::currentTestFailed()) return;
    QTRY_COMPARE_WITH_TIMEOUT(warmUps.size(), 4, kModelWaitMs);
    QVERIFY(session);
    QCOMPARE(session->conversationId(), conversations[3]);
    QVERIFY2(outstanding.size() == 2, "the first tabs' warm-ups were done before the follow-up was sent");
    QTRY_VERIFY_WITH_TIMEOUT(session->messages()->rowCount() == 4 && lastReplyStats(session).has_value(), kModelWaitMs);

    // The reply's first token, and the outstanding warm-ups that finished before it.
    int finishedBefore = -1;
    for (size_t i = sentAt, done = 0; i < events.size(); ++i) {
        if (events[i].token && !warmUps.values().contains(events[i].id)) {
            finishedBefore = int(done);
            break;
        }
        if (!events[i].token && outstanding.count(events[i].id)) ++done;
    }
    QVERIFY2(finishedBefore >= 0, "the follow-up's tokens were not seen");
    QVERIFY2(finishedBefore <= 1, qPrintable(QString("%1 of %2 outstanding warm-ups finished before the follow-up's first token")
                                                 .arg(finishedBefore).arg(outstanding.size())));

    // The closed tab's warm-up was cancelled (it was waiting for the others).
    const quint64 closed = warmUps[conversations[2]];
    const auto closedEnd = [&] {
        return std::find_if(events.begin(), events.end(), [&](const Seen& e) { return !e.token && e.id == closed; });
    };
    QTRY_VERIFY(closedEnd() != events.end());
    QCOMPARE(closedEnd()->reason, ReplyStats::FinishReason::Cancelled);
    // No warm-up shows as a reply: the other tabs still hold their question and answer only.
    QCOMPARE(app.tabs()->rowCount(), 3);
    for (int i = 0; i < 2; ++i) QCOMPARE(app.tabs()->sessionAt(i)->messages()->rowCount(), 2);
    // The start-up guard stayed armed until the last warm-up was done.
    QTRY_COMPARE_WITH_TIMEOUT(settled.size(), 1, kModelWaitMs);
    QVERIFY2(markerAtSettle, "the start-up marker was cleared before the warm-ups were done");
}

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestTabWarmup>(argc, argv); }

#include "test_tab_warmup.moc"
