// Qt Quick Test runner for the views in ui/: the QML test files (tst_*.qml) get
// `testApp`, a real ArborApp on a temporary database with the default model loading,
// so views bind to the real controllers and models, and `testStats`, which makes the
// ReplyStats a message row carries from the figures a test names.
#include "main_window.h"
#include "reply_stats.h"
#include "test_support.h"

#include <QQmlContext>
#include <QQmlEngine>
#include <QTemporaryDir>
#include <QtQuickTest>

#include <memory>

// testStats.make({promptTokens: 10, finishReason: ReplyStats.Cancelled}): the fields
// named, by their property names; the others as a reply that measured nothing has them.
class TestStats : public QObject {
    Q_OBJECT
public:
    Q_INVOKABLE QVariant make(const QVariantMap& fields) const {
        arbor::app::ReplyStats stats;
        const QMetaObject& meta = arbor::app::ReplyStats::staticMetaObject;
        for (auto it = fields.begin(); it != fields.end(); ++it) {
            const int index = meta.indexOfProperty(it.key().toUtf8().constData());
            if (index < 0 || !meta.property(index).writeOnGadget(&stats, it.value()))
                qFatal("testStats.make: no writable ReplyStats property %s", qPrintable(it.key()));
        }
        return QVariant::fromValue(stats);
    }
};

class Setup : public QObject {
    Q_OBJECT
public:
    Setup() {
        qputenv("QT_QPA_PLATFORM", "offscreen");
        qputenv("QT_QUICK_BACKEND", "software");
        arbor::app::prepareGui();
    }

public slots:
    void qmlEngineAvailable(QQmlEngine* engine) {
        engine->addImportPath(QStringLiteral("qrc:/qt/qml"));
        if (!app_) {
            app_ = std::make_unique<arbor::app::ArborApp>(
                std::filesystem::path(dir_.path().toStdString()) / "arbor.db");
            app_->start(QString::fromStdString(arbor::test::model_path().string()));
        }
        engine->rootContext()->setContextProperty(QStringLiteral("testApp"), app_.get());
        engine->rootContext()->setContextProperty(QStringLiteral("testStats"), &stats_);
    }
    void cleanupTestCase() { app_.reset(); }

private:
    QTemporaryDir dir_;
    const arbor::test::PrivateCacheHome cache_;  // the app's KV disk tier starts empty
    std::unique_ptr<arbor::app::ArborApp> app_;
    TestStats stats_;
};

QUICK_TEST_MAIN_WITH_SETUP(arbor_views, Setup)

#include "quick_test_main.moc"
