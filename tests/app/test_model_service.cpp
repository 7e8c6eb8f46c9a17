// The model service on the default model and on files that are not models: the states
// it goes through, load progress, errors that name the problem, submitting to a ready
// model (and not to one that failed), and a newer load superseding one in progress.
#include "model_service.h"
#include "arbor/paths.h"
#include "test_support.h"

#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using arbor::app::ModelService;
using arbor::app::Reply;
using arbor::app::ReplyStats;

namespace {

constexpr int kLoadMs = 60000;
constexpr int kThreads = 2;
constexpr int kKvMiB = 64;

} // namespace

class TestModelService : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString model_;
    qint64 loadMs_ = 0;  // how long a load of the default model took here

    QString tempFile(const QString& name, const QByteArray& bytes) {
        const QString path = dir_.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly)) return {};
        f.write(bytes);
        return path;
    }

    // The states a service reports, in order.
    static QStringList* recordStates(ModelService& s, QObject* context) {
        auto* states = new QStringList;
        connect(&s, &ModelService::stateChanged, context, [states, &s] { states->push_back(s.state()); });
        return states;
    }

    void expectFailure(ModelService& s, const QString& path, const QStringList& anyOf) {
        QSignalSpy changed(&s, &ModelService::stateChanged);
        s.load(path, kThreads, kKvMiB);
        QCOMPARE(s.state(), QString("loading"));
        QTRY_COMPARE_WITH_TIMEOUT(s.state(), QString("failed"), kLoadMs);
        QVERIFY(!s.ready());
        QVERIFY(!s.current());
        QCOMPARE(s.path(), path);
        QVERIFY(s.details().isEmpty());
        const QString error = s.error();
        QVERIFY(!error.isEmpty());
        // The error names the file and the problem.
        QVERIFY2(error.contains(QFileInfo(path).fileName()), qPrintable(error));
        bool named = false;
        for (const QString& word : anyOf) named |= error.contains(word, Qt::CaseInsensitive);
        QVERIFY2(named, qPrintable(QStringLiteral("error \"%1\" names none of: %2").arg(error, anyOf.join(", "))));
        QCOMPARE(s.start({{1, 2, 3}, {}}), nullptr);
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        QVERIFY(dir_.isValid());
        model_ = QString::fromStdString(arbor::test::model_path().string());
    }

    void startsEmpty() {
        ModelService s;
        QCOMPARE(s.state(), QString("none"));
        QVERIFY(!s.ready());
        QVERIFY(!s.current());
        QCOMPARE(s.progress(), 0.0);
        QVERIFY(s.path().isEmpty());
        QVERIFY(s.name().isEmpty());
        QCOMPARE(s.start({{1, 2, 3}, {}}), nullptr);
    }

    void loadsTheDefaultModelAndGenerates() {
        ModelService s;
        std::unique_ptr<QStringList> states(recordStates(s, this));
        QList<double> progress;
        connect(&s, &ModelService::progressChanged, this, [&] { progress << s.progress(); });
        QSignalSpy modelChanged(&s, &ModelService::modelChanged);
        QElapsedTimer timer;
        timer.start();
        s.load(model_, kThreads, kKvMiB);
        QCOMPARE(s.state(), QString("loading"));
        QVERIFY(!s.ready());
        QTRY_COMPARE_WITH_TIMEOUT(s.state(), QString("ready"), kLoadMs);
        loadMs_ = timer.elapsed();
        qInfo("loaded in %lld ms", loadMs_);

        QCOMPARE(*states, (QStringList{"loading", "ready"}));
        QCOMPARE(modelChanged.size(), 2);  // cleared when loading starts, set when ready
        QVERIFY(s.ready());
        QVERIFY(s.error().isEmpty());
        QCOMPARE(s.path(), model_);
        QCOMPARE(s.name(), QString("SmolLM2-135M-Instruct.Q4_1"));
        QVERIFY2(s.details().contains("layers") && s.details().contains("context"), qPrintable(s.details()));
        // Progress starts at 0, never goes back, passes through the middle, ends at 1.
        QVERIFY(progress.size() >= 3);
        QCOMPARE(progress.first(), 0.0);
        QCOMPARE(progress.last(), 1.0);
        QCOMPARE(s.progress(), 1.0);
        bool between = false;
        for (int i = 1; i < progress.size(); ++i) {
            QVERIFY2(progress[i] >= progress[i - 1], qPrintable(QString("progress went back at step %1").arg(i)));
            between |= progress[i] > 0.0 && progress[i] < 1.0;
        }
        QVERIFY(between);

        auto model = s.current();
        QVERIFY(model && model->model && model->engine && model->formatter);
        QCOMPARE(model->path, model_);
        const auto prompt = model->formatter->compose(
            {{arbor::Role::User, model->formatter->encode_content("Name a color.")}});
        arbor::Request request{prompt, {}};
        request.options.max_tokens = 6;
        request.options.stop_at_end_of_generation = false;
        Reply* reply = s.start(request);
        QVERIFY(reply);
        QSignalSpy finished(reply, &Reply::finished);
        int tokens = 0;
        connect(reply, &Reply::token, this, [&](int token, const QString&) {
            if (token >= 0) ++tokens;
        });
        QVERIFY(finished.wait(kLoadMs));
        QCOMPARE(finished.size(), 1);
        const auto stats = finished.at(0).at(0).value<ReplyStats>();
        QCOMPARE(stats.finishReason, ReplyStats::FinishReason::Length);
        QCOMPARE(stats.promptTokens, int(prompt.size()));
        QCOMPARE(stats.generatedTokens, 6);
        QCOMPARE(tokens, 6);
    }

    // The engine is made with the context length asked for, bounded by the context the
    // model was trained with; a prompt longer than it is refused.
    void loadsWithTheContextLengthAskedFor() {
        ModelService s;
        s.load(model_, kThreads, kKvMiB, 0, QStringLiteral("f16"), 512);
        QTRY_COMPARE_WITH_TIMEOUT(s.state(), QString("ready"), kLoadMs);
        QCOMPARE(s.contextSize(), 512);
        QCOMPARE(s.current()->engine->context_size(), 512);
        QVERIFY2(s.details().endsWith(QString("context 512 of %1").arg(s.current()->model->config().n_ctx_train)),
                 qPrintable(s.details()));
        const int trained = s.trainedContext();
        QCOMPARE(trained, s.current()->model->config().n_ctx_train);
        QVERIFY2(trained > 2048, qPrintable(QString::number(trained)));

        arbor::Request request{std::vector<arbor::TokenId>(600, 1), {}};
        Reply* reply = s.start(request);
        QVERIFY(reply);
        QSignalSpy finished(reply, &Reply::finished);
        QVERIFY(finished.wait(kLoadMs));
        const auto stats = finished.at(0).at(0).value<ReplyStats>();
        QCOMPARE(stats.finishReason, ReplyStats::FinishReason::Error);
        QVERIFY2(stats.error.contains("the context holds 512"), qPrintable(stats.error));

        // More than the model was trained with (and a pool that holds more): the model's own.
        s.load(model_, kThreads, 256, 0, QStringLiteral("f16"), trained * 4);
        QTRY_COMPARE_WITH_TIMEOUT(s.state(), QString("ready"), kLoadMs);
        QCOMPARE(s.contextSize(), trained);
        QCOMPARE(s.trainedContext(), trained);
    }

    void missingFileFails() {
        ModelService s;
        std::unique_ptr<QStringList> states(recordStates(s, this));
        expectFailure(s, dir_.filePath("no-such-model.gguf"), {"no such file"});
        QCOMPARE(*states, (QStringList{"loading", "failed"}));
        QVERIFY2(!s.error().contains("arbor-download-model"), qPrintable(s.error()));  // not the default model
        QVERIFY(!s.missingDefaultModel());
    }

    // A missing default model (a fresh package install) says how to install it.
    void missingDefaultModelSaysHowToInstallIt() {
        const QString path = dir_.filePath("default-model.gguf");
        const arbor::test::ScopedEnv model("ARBOR_MODEL", path.toUtf8());
        QCOMPARE(QString::fromStdString(arbor::default_model_path().string()), path);
        ModelService s;
        expectFailure(s, path, {"no such file"});
        QVERIFY2(s.error().contains("arbor-download-model"), qPrintable(s.error()));
        QVERIFY(s.missingDefaultModel());  // the window offers the download
    }

    void garbageFileFails() {
        QByteArray junk;
        for (int i = 0; i < 4096; ++i) junk += "this is not a model file. ";
        const QString path = tempFile("garbage.gguf", junk);
        QVERIFY(!path.isEmpty());
        ModelService s;
        expectFailure(s, path, {"not a GGUF file", "bad magic"});
    }

    void truncatedModelFails() {
        QFile real(model_);
        QVERIFY(real.open(QIODevice::ReadOnly));
        const QString path = tempFile("truncated.gguf", real.read(256 * 1024));  // the header and part of the metadata
        QVERIFY(!path.isEmpty());
        ModelService s;
        expectFailure(s, path, {"truncated"});

        // Header and metadata whole, tensor data cut off.
        const QString cut = tempFile("cut.gguf", [&] {
            real.seek(0);
            return real.read(real.size() / 2);
        }());
        QVERIFY(!cut.isEmpty());
        expectFailure(s, cut, {"truncated", "beyond the end"});
    }

    void recoversAfterAFailureAndUnloadsBeforeTheNext() {
        ModelService s;
        expectFailure(s, dir_.filePath("missing.gguf"), {"no such file"});
        s.load(model_, kThreads, kKvMiB);
        QVERIFY(s.error().isEmpty());  // cleared as soon as the new load starts
        QTRY_COMPARE_WITH_TIMEOUT(s.state(), QString("ready"), kLoadMs);
        QVERIFY(s.error().isEmpty());

        // Loading another file tells the sessions first and drops the current model at once.
        QSignalSpy aboutToUnload(&s, &ModelService::aboutToUnload);
        bool readyWhenTold = false;
        connect(&s, &ModelService::aboutToUnload, this, [&] { readyWhenTold = s.ready(); });
        expectFailure(s, dir_.filePath("other.gguf"), {"no such file"});
        QCOMPARE(aboutToUnload.size(), 1);
        QVERIFY(readyWhenTold);  // told while the old model was still there
    }

    // Switching models never serves one model's KV cache to another, from memory or from
    // the disk tier they share; switching back to the first reads its own pages again.
    void cacheIsNeverSharedBetweenModels() {
        const arbor::test::PrivateCacheHome cache;  // the disk tier starts empty
        const QString first = QString::fromStdString((arbor::test::test_data_dir() / "synthetic" / "qwen2-tiny.gguf").string());
        const QString second = QString::fromStdString((arbor::test::test_data_dir() / "synthetic" / "qwen3-tiny.gguf").string());
        // Ids both vocabularies have (300 and 307 tokens), long enough for the disk tier's
        // least read (4 pages).
        std::vector<arbor::TokenId> prompt;
        for (int i = 0; i < 160; ++i) prompt.push_back(arbor::TokenId(1 + (i * 37) % 250));
        constexpr int kDiskMiB = 64;
        ModelService s;
        auto run = [&](const QString& path) -> ReplyStats {
            s.load(path, kThreads, kKvMiB, kDiskMiB);
            if (!QTest::qWaitFor([&] { return s.state() != "loading"; }, kLoadMs) || !s.ready()) {
                qWarning("%s did not load: %s", qPrintable(path), qPrintable(s.error()));
                return {};
            }
            arbor::Request request{prompt, {}};
            request.options.max_tokens = 2;
            request.options.stop_at_end_of_generation = false;
            Reply* reply = s.start(request);
            if (!reply) return {};
            QSignalSpy finished(reply, &Reply::finished);
            if (!finished.wait(kLoadMs)) return {};
            return finished.at(0).at(0).value<ReplyStats>();
        };
        const ReplyStats a = run(first);
        QCOMPARE(a.finishReason, ReplyStats::FinishReason::Length);
        QCOMPARE(a.cachedTokens, 0);
        // The first model's pages go to disk when its engine closes, before the second loads.
        const ReplyStats b = run(second);
        QCOMPARE(b.finishReason, ReplyStats::FinishReason::Length);
        QCOMPARE(b.promptTokens, int(prompt.size()));
        QCOMPARE(b.cachedTokens, 0);
        QCOMPARE(b.diskTokens, 0);
        // The same pages do serve the model that wrote them: the check above could fail.
        const ReplyStats again = run(first);
        QCOMPARE(again.finishReason, ReplyStats::FinishReason::Length);
        QVERIFY2(again.diskTokens > 0, qPrintable(QString::number(again.diskTokens)));
        QCOMPARE(again.cachedTokens, again.diskTokens);
    }

    void newerLoadSupersedesOneInProgress() {
        // The first (good) load is still running when the second (missing file) starts:
        // the outcome is the second's, and the first's late success is dropped.
        {
            ModelService s;
            std::unique_ptr<QStringList> states(recordStates(s, this));
            const QString missing = dir_.filePath("second.gguf");
            s.load(model_, kThreads, kKvMiB);
            s.load(missing, kThreads, kKvMiB);
            QTRY_COMPARE_WITH_TIMEOUT(s.state(), QString("failed"), kLoadMs);
            QTest::qWait(int(std::max<qint64>(2 * loadMs_, 1500)));  // the first load finishes meanwhile
            QCOMPARE(s.state(), QString("failed"));
            QCOMPARE(s.path(), missing);
            QVERIFY(!s.ready());
            QVERIFY2(s.error().contains("second.gguf"), qPrintable(s.error()));
            QCOMPARE(states->count("ready"), 0);
            QVERIFY(!s.current());
        }
        // The other way round: a failing load superseded by a good one ends ready.
        {
            ModelService s;
            std::unique_ptr<QStringList> states(recordStates(s, this));
            QByteArray junk(1 << 20, 'x');
            const QString bad = tempFile("bad.gguf", junk);
            s.load(bad, kThreads, kKvMiB);
            s.load(model_, kThreads, kKvMiB);
            QTRY_COMPARE_WITH_TIMEOUT(s.state(), QString("ready"), kLoadMs);
            QTest::qWait(300);
            QCOMPARE(s.state(), QString("ready"));
            QVERIFY(s.error().isEmpty());
            QCOMPARE(s.path(), model_);
            QCOMPARE(states->count("failed"), 0);
            QVERIFY(s.current());
        }
    }

    void destroyedWhileLoading() {
        // The destructor waits for the background load; nothing runs on a dead object.
        auto s = std::make_unique<ModelService>();
        s->load(model_, kThreads, kKvMiB);
        QTest::qWait(20);
        s.reset();
        QTest::qWait(100);  // a late queued answer would touch freed memory here
    }
};

QTEST_GUILESS_MAIN(TestModelService)
#include "test_model_service.moc"
