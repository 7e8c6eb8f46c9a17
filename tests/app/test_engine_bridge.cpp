// The engine bridge on the default model: each request's Reply gets its token and finish
// signals on the test's (GUI) thread, in order, matching what the engine's own sink
// receives, and no other request's.
#include "engine_bridge.h"
#include "test_support.h"

#include "../engine/engine_test_support.h"

#include <QSignalSpy>
#include <QtTest>

using arbor::app::EngineBridge;
using arbor::app::Reply;
using arbor::app::ReplyStats;

class TestEngineBridge : public QObject {
    Q_OBJECT
    std::unique_ptr<arbor::Model> model_;
    std::unique_ptr<arbor::Engine> engine_;

    arbor::Request greedy(const std::string& text, int max_tokens) const {
        arbor::Request r;
        r.prompt = model_->tokenizer().encode(text, model_->tokenizer().adds_bos(), false);
        r.options.sampler.temperature = 0.0f;
        r.options.max_tokens = max_tokens;
        r.options.stop_at_end_of_generation = false;
        return r;
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        model_ = arbor::Model::load(arbor::test::model_path());
        arbor::EngineOptions o;
        o.backend.kv_tokens = 2048;
        o.backend.threads = 2;
        engine_ = std::make_unique<arbor::Engine>(*model_, o);
    }

    void tokensAndFinishArriveOnTheGuiThread() {
        const auto request = greedy("The three primary colors are", 12);
        // Reference: the engine's own events for the same greedy request.
        arbor::test::Collector direct;
        const auto ref_id = direct.submit(*engine_, request);
        QVERIFY(direct.wait(ref_id));
        const auto expected = direct.get(ref_id);
        QCOMPARE(int(expected.tokens.size()), 12);

        EngineBridge bridge(*engine_);
        QThread* const gui = QThread::currentThread();
        QList<int> tokens;
        QString text;
        bool wrong_thread = false;
        QPointer<Reply> reply = bridge.submit(request);
        // A second request at once: its events must reach only its own Reply.
        QPointer<Reply> other = bridge.submit(greedy("Name a large river:", 6));
        QVERIFY(reply && other && reply->id() != other->id());
        connect(reply, &Reply::token, this, [&](int token, const QString& piece) {
            wrong_thread |= QThread::currentThread() != gui;
            tokens << token;
            text += piece;
        }, Qt::DirectConnection);  // runs on the emitting thread, as a GUI-side direct slot would
        QSignalSpy finished(reply.data(), &Reply::finished);
        QSignalSpy otherFinished(other.data(), &Reply::finished);
        QThread* finished_on = nullptr;
        connect(reply, &Reply::finished, this, [&] { finished_on = QThread::currentThread(); },
                Qt::DirectConnection);

        const quint64 id = reply->id();
        QVERIFY(bridge.isRunning(id));
        QVERIFY(tokens.isEmpty());  // nothing is delivered outside the event loop
        QVERIFY(finished.wait(120000));
        QTRY_COMPARE_WITH_TIMEOUT(otherFinished.size(), 1, 120000);
        QVERIFY(!wrong_thread);
        QCOMPARE(finished_on, gui);
        QCOMPARE(finished.size(), 1);
        const auto stats = finished.at(0).at(0).value<ReplyStats>();
        QCOMPARE(stats.finishReason, ReplyStats::FinishReason::Length);
        QVERIFY(stats.error.isEmpty());
        QCOMPARE(stats.promptTokens, int(request.prompt.size()));
        QCOMPARE(stats.generatedTokens, 12);
        QCOMPARE(stats.cachedTokens, int(request.prompt.size()) - 1);  // the reference run cached it
        QCOMPARE(otherFinished.at(0).at(0).value<ReplyStats>().generatedTokens, 6);
        QVERIFY(!bridge.isRunning(id));
        QTRY_VERIFY(!reply && !other);  // finished Replies are deleted

        QList<int> want;
        for (auto t : expected.tokens) want << t;
        QCOMPARE(tokens, want);
        QCOMPARE(text, QString::fromStdString(expected.text));
        QVERIFY(!text.isEmpty());
    }

    void cancelFinishesAsCancelled() {
        EngineBridge bridge(*engine_);
        Reply* reply = bridge.submit(greedy("Tell me a very long story about a dragon.", 1500));
        QSignalSpy token(reply, &Reply::token);
        QSignalSpy finished(reply, &Reply::finished);
        QVERIFY(token.wait(120000));
        reply->cancel();
        QVERIFY(finished.wait(120000));
        QCOMPARE(finished.at(0).at(0).value<ReplyStats>().finishReason, ReplyStats::FinishReason::Cancelled);
        QVERIFY(token.size() < 1500);
    }

    void destroyingTheBridgeCancelsItsRequests() {
        auto bridge = std::make_unique<EngineBridge>(*engine_);
        QPointer<Reply> reply = bridge->submit(greedy("Count slowly from one to one thousand:", 1500));
        QSignalSpy token(reply.data(), &Reply::token);
        QSignalSpy finished(reply.data(), &Reply::finished);
        QVERIFY(token.wait(120000));
        const auto steps_before = engine_->stats().steps;
        bridge.reset();  // later events of the request must not reach the dead bridge
        engine_->wait_idle();
        QCoreApplication::processEvents();
        QCOMPARE(engine_->stats().running + engine_->stats().waiting, 0);
        QVERIFY(!reply);  // deleted with the bridge, without finishing
        QCOMPARE(finished.size(), 0);
        // Left running, the request would have taken one step per remaining token.
        QVERIFY2(engine_->stats().steps - steps_before < 100,
                 qPrintable(QString("%1 steps after the bridge went").arg(engine_->stats().steps - steps_before)));
    }

    void cleanupTestCase() { engine_.reset(); }
};

QTEST_GUILESS_MAIN(TestEngineBridge)
#include "test_engine_bridge.moc"
