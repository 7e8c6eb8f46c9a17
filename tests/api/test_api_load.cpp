// The API under ordinary heavy load on the default model: 64 clients streaming chat
// completions at once while /health is probed throughout; every stream ends with
// [DONE] and every probe is answered 200.
#include "api_test_fixture.h"

#include <atomic>
#include <thread>

using arbor::api::Json;
using arbor::test::chat_body;
using arbor::test::message;

class TestApiLoad : public QObject {
    Q_OBJECT
    arbor::test::ApiFixture f_;

private slots:
    void initTestCase() { f_.start(8192); }
    void cleanupTestCase() { f_.stop(); }

    void streamsAndHealthProbesAllSucceed() {
        constexpr int kStreams = 64;
        std::vector<std::vector<std::string>> events(kStreams);
        std::vector<int> statuses(kStreams, 0);
        std::atomic<int> streams_done{0};
        std::vector<std::thread> clients;
        for (int i = 0; i < kStreams; ++i)
            clients.emplace_back([&, i] {
                Json messages = Json::array();
                messages.push_back(message("user", "Client " + std::to_string(i) + " says hello. Count to five."));
                Json body = chat_body(f_.model_id, std::move(messages), 8);
                body.set("stream", true);
                events[i] = f_.stream("/v1/chat/completions", body, &statuses[i]);
                ++streams_done;
            });
        int probes = 0, healthy = 0;
        std::vector<int> failed_probes;
        while (streams_done < kStreams) {
            const auto r = arbor::test::http_request(f_.port(), "GET", "/health");
            ++probes;
            if (r && r->status == 200) ++healthy;
            else failed_probes.push_back(r ? r->status : 0);
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        for (auto& t : clients) t.join();
        qInfo("%d streams, %d health probes during them", kStreams, probes);
        QVERIFY(probes > 0);
        QVERIFY2(failed_probes.empty(), qPrintable(QString("%1 of %2 probes failed, first status %3")
                                                       .arg(failed_probes.size())
                                                       .arg(probes)
                                                       .arg(failed_probes.empty() ? 0 : failed_probes[0])));
        QCOMPARE(healthy, probes);
        for (int i = 0; i < kStreams; ++i) {
            QCOMPARE(statuses[i], 200);
            QVERIFY2(!events[i].empty() && events[i].back() == "[DONE]", events[i].empty() ? "no events" : events[i].back().c_str());
            QVERIFY(events[i].size() >= 3);  // role chunk, text, finish chunk, [DONE]
        }
    }
};

QTEST_GUILESS_MAIN(TestApiLoad)
#include "test_api_load.moc"
