// Real chat templates (tests/data/chat_templates, as their publishers ship them) rendered
// by our Jinja interpreter, compared byte for byte with Python jinja2's renders of the
// same conversations (expected.json, made by make_expected.py there).
#include "chat_template_fixtures.h"

#include "arbor/jinja.h"

#include <QJsonDocument>
#include <QtTest>

using namespace arbor;

namespace {

QJsonObject read_json(const QString& name) { return QJsonDocument::fromJson(test::chat_template_fixture(name)).object(); }

} // namespace

class TestJinjaTemplates : public QObject {
    Q_OBJECT

private slots:
    void rendersLikeJinja2_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("conversation");
        const QJsonObject cases = read_json("conversations.json");
        const QJsonObject templates = cases["templates"].toObject();
        QVERIFY(templates.size() >= 15);
        for (const QString& file : templates.keys())
            for (const QString& conversation : cases["conversations"].toObject().keys())
                QTest::newRow(qPrintable(file + " " + conversation)) << file << conversation;
    }

    void rendersLikeJinja2() {
        QFETCH(QString, file);
        QFETCH(QString, conversation);
        const QJsonObject cases = read_json("conversations.json");
        const QJsonObject c = cases["conversations"].toObject()[conversation].toObject();
        const QJsonObject tokens = cases["templates"].toObject()[file].toObject();
        const QJsonObject expected = read_json("expected.json")[file].toObject()[conversation].toObject();
        QVERIFY(!expected.isEmpty());

        jinja::Value context{jinja::Object{}};
        context.set("messages", test::to_value(c["messages"]));
        context.set("add_generation_prompt", jinja::Value(c["add_generation_prompt"].toBool()));
        context.set("bos_token", test::to_value(tokens["bos_token"]));
        context.set("eos_token", test::to_value(tokens["eos_token"]));
        context.set("strftime_now", test::pinned_strftime_now());
        if (c.contains("tools")) context.set("tools", test::to_value(c["tools"]));  // else undefined, as jinja2's

        const jinja::CompiledTemplate tpl(test::chat_template_fixture(file).toStdString());
        if (expected.contains("error")) {
            try {
                (void)tpl.render(context);
                QFAIL("the template rendered where jinja2 raised");
            } catch (const jinja::JinjaError& e) {
                QVERIFY2(QString(e.what()).contains(expected["error"].toString()), e.what());
            }
            return;
        }
        std::string got;
        try {
            got = tpl.render(context);
        } catch (const jinja::JinjaError& e) {
            QFAIL(e.what());
        }
        const std::string want = expected["output"].toString().toStdString();
        if (got != want) {
            size_t at = 0;
            while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
            qWarning("first difference at byte %zu:\n got: %s\nwant: %s", at, got.substr(at, 80).c_str(),
                     want.substr(at, 80).c_str());
        }
        QCOMPARE(got, want);
    }
};

QTEST_GUILESS_MAIN(TestJinjaTemplates)
#include "test_jinja_templates.moc"
