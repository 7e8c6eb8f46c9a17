#include "arbor/error.h"
#include "arbor/sampler.h"

#include <QtTest>

#include <algorithm>
#include <chrono>
#include <limits>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

using arbor::Sampler;
using arbor::SamplerParams;
namespace sampling = arbor::sampling;

namespace {

SamplerParams plain(float temperature) {
    SamplerParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    return p;
}

std::vector<int32_t> ids_of(const sampling::Candidates& c) {
    std::vector<int32_t> ids;
    for (const auto& x : c.items) ids.push_back(x.id);
    return ids;
}

// Logits whose softmax is exactly `probs` (up to float rounding).
std::vector<float> log_probs(const std::vector<double>& probs) {
    std::vector<float> l;
    for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
    return l;
}

std::vector<float> random_logits(size_t n, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, 3.0f);
    std::vector<float> l(n);
    for (auto& x : l) x = dist(gen);
    return l;
}

} // namespace

class TestSampler : public QObject {
    Q_OBJECT

private slots:
    void greedyPicksArgmax() {
        Sampler s(plain(0.0f), 6);
        const std::vector<float> logits{0.1f, -2.0f, 3.5f, 3.4f, -9.0f, 1.0f};
        QCOMPARE(s.sample(logits), 2);
        // Ties go to the lowest id.
        const std::vector<float> tied{1.0f, 5.0f, 2.0f, 5.0f, 5.0f, 0.0f};
        QCOMPARE(s.sample(tied), 1);
        // Greedy ignores the truncation stages and the seed.
        SamplerParams p;
        p.temperature = -1.0f;
        p.seed = 1234;
        Sampler g(p, 6);
        QCOMPARE(g.sample(logits), 2);
    }

    void sampleDoesNotModifyLogits() {
        SamplerParams p = plain(0.0f);
        p.repetition_penalty = 3.0f;
        p.presence_penalty = 1.0f;
        Sampler s(p, 4);
        s.accept(0);
        const std::vector<float> logits{4.0f, 3.0f, 1.0f, 0.0f};
        const std::vector<float> copy = logits;
        // 4/3 - 1 < 3, so the penalty moves the argmax to token 1.
        QCOMPARE(s.sample(logits), 1);
        QCOMPARE(logits, copy);
    }

    void topKKeepsExactlyK() {
        const auto logits = random_logits(1000, 7);
        auto c = sampling::make_candidates(logits);
        sampling::top_k(c, 10);
        QCOMPARE(c.items.size(), size_t(10));
        QVERIFY(c.sorted);
        std::vector<int32_t> order(logits.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
        order.resize(10);
        QCOMPARE(ids_of(c), order);

        // Ties at the cut are broken by the lower id.
        const std::vector<float> tied{1.0f, 2.0f, 2.0f, 0.5f, 2.0f};
        auto t = sampling::make_candidates(tied);
        sampling::top_k(t, 2);
        QCOMPARE(ids_of(t), (std::vector<int32_t>{1, 2}));

        // k <= 0 or k >= size leaves everything in id order.
        auto all = sampling::make_candidates(tied);
        sampling::top_k(all, 0);
        QCOMPARE(ids_of(all), (std::vector<int32_t>{0, 1, 2, 3, 4}));
        sampling::top_k(all, 9);
        QCOMPARE(all.items.size(), size_t(5));
    }

    // argmax against std::max_element (the first largest) at every length around its
    // blocks of sixteen, with ties, infinities and signed zeros; a NaN anywhere is refused.
    void argmaxIsTheFirstLargest() {
        for (size_t n : {size_t(1), size_t(7), size_t(8), size_t(9), size_t(15), size_t(16), size_t(17), size_t(33),
                         size_t(1000), size_t(49152)}) {
            for (int variant = 0; variant < 4; ++variant) {
                auto logits = random_logits(n, uint32_t(n * 4 + variant));
                if (variant == 1 && n > 3) logits[n - 1] = logits[1] = 50.0f;  // a tie, the later one in the tail
                if (variant == 2) std::fill(logits.begin(), logits.end(), -std::numeric_limits<float>::infinity());
                if (variant == 3) {
                    std::fill(logits.begin(), logits.end(), -1.0f);
                    logits[n / 2] = 0.0f;
                    logits[n / 3] = -0.0f;  // equal to +0: the earlier index wins
                }
                const auto want = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
                QCOMPARE(sampling::argmax(logits), want);
                logits[n - 1] = std::nanf("");
                QVERIFY_THROWS_EXCEPTION(arbor::Error, sampling::argmax(logits));
            }
        }
    }

    void topKOfMatchesMakeThenTopK() {
        auto logits = random_logits(5000, 8);
        logits[17] = logits[4000] = 100.0f;  // a tie at the very top
        for (int k : {1, 2, 40, 4999, 5000, 0}) {
            auto full = sampling::make_candidates(logits);
            sampling::top_k(full, k);
            const auto direct = sampling::top_k_of(logits, k);
            QCOMPARE(ids_of(direct), ids_of(full));
        }
        QCOMPARE(sampling::top_k_of(logits, 1).items[0].id, 17);
        logits[9] = std::nanf("");
        QVERIFY_THROWS_EXCEPTION(arbor::Error, sampling::top_k_of(logits, 3));
    }

    void topPKeepsSmallestSetReachingP() {
        // Probabilities by id: 0.1, 0.5, 0.05, 0.2, 0.15. Survivors keep id order.
        const auto logits = log_probs({0.1, 0.5, 0.05, 0.2, 0.15});
        auto run = [&](float p) {
            auto c = sampling::make_candidates(logits);
            sampling::top_p(c, p);
            return ids_of(c);
        };
        QCOMPARE(run(0.45f), (std::vector<int32_t>{1}));
        QCOMPARE(run(0.6f), (std::vector<int32_t>{1, 3}));
        QCOMPARE(run(0.8f), (std::vector<int32_t>{1, 3, 4}));
        QCOMPARE(run(0.9f), (std::vector<int32_t>{0, 1, 3, 4}));
        QCOMPARE(run(0.97f), (std::vector<int32_t>{0, 1, 2, 3, 4}));
        QCOMPARE(run(0.0f), (std::vector<int32_t>{1}));
        QCOMPARE(run(1.0f), (std::vector<int32_t>{0, 1, 2, 3, 4}));
        // On sorted candidates (after top-k) it keeps a prefix.
        auto c = sampling::make_candidates(logits);
        sampling::top_k(c, 4);
        sampling::top_p(c, 0.7f);  // of the renormalised 0.5/0.95, 0.2/0.95, ...
        QCOMPARE(ids_of(c), (std::vector<int32_t>{1, 3}));
    }

    void topPOnLargeVocabulary() {
        // Against a brute-force full sort, for a flat and a peaked distribution.
        for (float scale : {0.3f, 1.0f, 6.0f}) {
            auto logits = random_logits(50000, 11);
            for (auto& x : logits) x *= scale;
            std::vector<int32_t> order(logits.size());
            std::iota(order.begin(), order.end(), 0);
            std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
            double total = 0.0;
            for (float x : logits) total += std::exp(double(x) - logits[order[0]]);
            const double p = 0.9;
            size_t n = 0;
            double cum = 0.0;
            while (cum < p * total) cum += std::exp(double(logits[order[n++]]) - logits[order[0]]);
            order.resize(n);
            std::sort(order.begin(), order.end());

            auto c = sampling::make_candidates(logits);
            sampling::top_p(c, float(p));
            QCOMPARE(ids_of(c), order);
        }
    }

    void minPThreshold() {
        // Probabilities by id: 0.04, 0.5, 0.2, 0.1, 0.16; min_p 0.3 keeps p >= 0.15.
        const auto logits = log_probs({0.04, 0.5, 0.2, 0.1, 0.16});
        auto c = sampling::make_candidates(logits);
        sampling::min_p(c, 0.3f);
        QCOMPARE(ids_of(c), (std::vector<int32_t>{1, 2, 4}));
        auto d = sampling::make_candidates(logits);
        sampling::min_p(d, 0.0f);
        QCOMPARE(d.items.size(), size_t(5));
        auto e = sampling::make_candidates(logits);
        sampling::min_p(e, 1.0f);
        QCOMPARE(ids_of(e), (std::vector<int32_t>{1}));
    }

    void temperatureScales() {
        auto c = sampling::make_candidates(std::vector<float>{2.0f, -1.0f, 0.5f});
        sampling::temperature(c, 0.5f);
        QCOMPARE(c.items[0].logit, 4.0f);
        QCOMPARE(c.items[1].logit, -2.0f);
        QCOMPARE(c.items[2].logit, 1.0f);
        const auto probs = sampling::probabilities(c);
        const double z = std::exp(4.0) + std::exp(-2.0) + std::exp(1.0);
        QVERIFY(std::abs(probs[0] - std::exp(4.0) / z) < 1e-6);
        QVERIFY(std::abs(probs[2] - std::exp(1.0) / z) < 1e-6);
    }

    void penaltyFormulas() {
        std::vector<float> l{3.0f, -1.0f, 2.0f, 0.0f, 5.0f};
        const sampling::TokenCounts counts{{0, 1}, {1, 2}, {3, 3}, {99, 4}};
        // Repetition only: positive logits divided, non-positive multiplied.
        auto rep = l;
        sampling::apply_penalties(rep, counts, 2.0f, 0.0f, 0.0f);
        QCOMPARE(rep, (std::vector<float>{1.5f, -2.0f, 2.0f, 0.0f, 5.0f}));
        // Presence: a flat amount for every token seen.
        auto pres = l;
        sampling::apply_penalties(pres, counts, 1.0f, 0.5f, 0.0f);
        QCOMPARE(pres, (std::vector<float>{2.5f, -1.5f, 2.0f, -0.5f, 5.0f}));
        // Frequency: proportional to the count.
        auto freq = l;
        sampling::apply_penalties(freq, counts, 1.0f, 0.0f, 0.25f);
        QCOMPARE(freq, (std::vector<float>{2.75f, -1.5f, 2.0f, -0.75f, 5.0f}));
        // All three: repetition first, then subtraction.
        auto all = l;
        sampling::apply_penalties(all, counts, 2.0f, 0.5f, 0.25f);
        QCOMPARE(all, (std::vector<float>{0.75f, -3.0f, 2.0f, -1.25f, 5.0f}));
    }

    void penaltyWindow() {
        SamplerParams p = plain(0.0f);
        p.presence_penalty = 10.0f;
        p.penalty_last_n = 2;
        Sampler s(p, 4);
        const std::vector<float> logits{4.0f, 3.0f, 2.0f, 1.0f};
        QCOMPARE(s.sample(logits), 0);
        s.accept(0);
        QCOMPARE(s.sample(logits), 1);
        s.accept(1);
        QCOMPARE(s.sample(logits), 2);
        s.accept(2);  // token 0 leaves the window of 2
        QCOMPARE(s.sample(logits), 0);
        s.reset();
        QCOMPARE(s.sample(logits), 0);
        // penalty_last_n = 0 disables the penalties.
        p.penalty_last_n = 0;
        Sampler off(p, 4);
        off.accept(0);
        QCOMPARE(off.sample(logits), 0);
    }

    void unitInterval() {
        QCOMPARE(sampling::unit_interval(0), 0.0);
        QCOMPARE(sampling::unit_interval(uint64_t(1) << 63), 0.5);
        QVERIFY(sampling::unit_interval(~uint64_t(0)) < 1.0);
        QVERIFY(sampling::unit_interval(~uint64_t(0)) > 0.9999999);
    }

    void sameSeedSameDraws() {
        const auto logits = random_logits(500, 3);
        auto draws = [&](uint64_t seed) {
            SamplerParams p;
            p.temperature = 1.0f;
            p.top_k = 100;
            p.top_p = 0.99f;
            p.min_p = 0.0f;
            p.seed = seed;
            Sampler s(p, 500);
            std::vector<int32_t> out;
            for (int i = 0; i < 200; ++i) out.push_back(s.sample(logits));
            return out;
        };
        const auto a = draws(42);
        QCOMPARE(draws(42), a);
        QVERIFY(draws(43) != a);
        QVERIFY(std::set<int32_t>(a.begin(), a.end()).size() > 5);

        SamplerParams p = plain(1.0f);
        p.seed = 42;
        Sampler s(p, 500);
        std::vector<int32_t> first, again;
        for (int i = 0; i < 20; ++i) first.push_back(s.sample(logits));
        s.reset();
        for (int i = 0; i < 20; ++i) again.push_back(s.sample(logits));
        QCOMPARE(again, first);
    }

    void frequenciesMatchSoftmax() {
        const std::vector<float> logits{1.0f, 0.2f, -0.5f, 1.3f, 0.0f, -3.0f};
        const float temp = 0.7f;
        SamplerParams p = plain(temp);
        p.seed = 2024;
        Sampler s(p, 6);
        const int n = 20000;
        std::vector<int> hits(logits.size());
        for (int i = 0; i < n; ++i) ++hits[size_t(s.sample(logits))];
        double z = 0.0;
        for (float l : logits) z += std::exp(double(l) / temp);
        for (size_t i = 0; i < logits.size(); ++i) {
            const double expected = std::exp(double(logits[i]) / temp) / z;
            const double got = double(hits[i]) / n;
            // 5 standard deviations of a binomial proportion.
            const double tol = 5.0 * std::sqrt(expected * (1 - expected) / n) + 1e-3;
            QVERIFY2(std::abs(got - expected) < tol,
                     qPrintable(QString("token %1: %2 vs %3").arg(i).arg(got).arg(expected)));
        }
    }

    void chainRenormalisesOverSurvivors() {
        // top_k = 3 keeps ids 3, 0, 1; the draw follows their renormalised softmax.
        const std::vector<float> logits{1.0f, 0.2f, -0.5f, 1.3f, 0.0f, -3.0f};
        SamplerParams p = plain(1.0f);
        p.top_k = 3;
        p.seed = 5;
        Sampler s(p, 6);
        const int n = 20000;
        std::vector<int> hits(logits.size());
        for (int i = 0; i < n; ++i) ++hits[size_t(s.sample(logits))];
        QCOMPARE(hits[2] + hits[4] + hits[5], 0);
        const double z = std::exp(1.0) + std::exp(0.2) + std::exp(1.3);
        for (int id : {0, 1, 3}) {
            const double expected = std::exp(double(logits[size_t(id)])) / z;
            QVERIFY(std::abs(double(hits[size_t(id)]) / n - expected) < 0.02);
        }
    }

    void maskedLogitsNeverDrawn() {
        const float inf = std::numeric_limits<float>::infinity();
        const std::vector<float> logits{-inf, 0.0f, -inf, 0.5f};
        SamplerParams p = plain(1.0f);
        p.seed = 9;
        Sampler s(p, 4);
        std::set<int32_t> seen;
        for (int i = 0; i < 500; ++i) seen.insert(s.sample(logits));
        QCOMPARE(seen, (std::set<int32_t>{1, 3}));
        // All masked: the lowest id, deterministically.
        Sampler g(plain(0.0f), 2);
        QCOMPARE(g.sample(std::vector<float>{-inf, -inf}), 0);
    }

    void largeVocabularyDefaults() {
        const int32_t n_vocab = 151936;
        const auto logits = random_logits(size_t(n_vocab), 99);
        std::vector<int32_t> order(logits.size());
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + 40, order.end(),
                          [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
        const std::set<int32_t> top40(order.begin(), order.begin() + 40);
        Sampler s(SamplerParams{}, n_vocab);
        const auto start = std::chrono::steady_clock::now();
        const int rounds = 50;
        for (int i = 0; i < rounds; ++i) {
            const int32_t t = s.sample(logits);
            QVERIFY(top40.count(t) == 1);
            s.accept(t);
        }
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
        qInfo("default chain on %d logits: %.1f us per sample", n_vocab, double(us.count()) / rounds);
    }

    void badInputThrows() {
        QVERIFY_THROWS_EXCEPTION(arbor::Error, Sampler(SamplerParams{}, 0));
        SamplerParams bad;
        bad.repetition_penalty = 0.0f;
        QVERIFY_THROWS_EXCEPTION(arbor::Error, Sampler(bad, 10));
        bad = SamplerParams{};
        bad.penalty_last_n = -1;
        QVERIFY_THROWS_EXCEPTION(arbor::Error, Sampler(bad, 10));
        bad = SamplerParams{};
        bad.top_p = std::nanf("");
        QVERIFY_THROWS_EXCEPTION(arbor::Error, Sampler(bad, 10));

        Sampler s(SamplerParams{}, 4);
        QVERIFY_THROWS_EXCEPTION(arbor::Error, s.sample(std::vector<float>{1.0f, 2.0f}));
        QVERIFY_THROWS_EXCEPTION(arbor::Error, s.sample(std::vector<float>{1.0f, std::nanf(""), 0.0f, 0.0f}));
        QVERIFY_THROWS_EXCEPTION(arbor::Error, s.accept(4));
        QVERIFY_THROWS_EXCEPTION(arbor::Error, s.accept(-1));
        Sampler g(plain(0.0f), 2);
        QVERIFY_THROWS_EXCEPTION(arbor::Error, g.sample(std::vector<float>{std::nanf(""), 1.0f}));
    }
};

QTEST_APPLESS_MAIN(TestSampler)
#include "test_sampler.moc"
