// What part of a conversation goes into the prompt when it outgrows the context, with the
// default model's tokenizer and chat template: the system prompt and the newest message
// are always kept, whole turns are left out from the oldest, the cut stays put from turn
// to turn (so each prompt extends the previous one) and moves by about a quarter of the
// context at once, and a message that cannot fit even alone is an error.
#include "context_window.h"
#include "test_support.h"

#include "arbor/model.h"

#include <QtTest>

#include <memory>

using arbor::ChatMessage;
using arbor::Role;
using arbor::TokenId;
using arbor::app::contextCutCandidates;
using arbor::app::fitContext;

namespace {

constexpr int kContext = 512;
constexpr int kReserve = 64;

bool startsWith(const std::vector<TokenId>& v, const std::vector<TokenId>& prefix) {
    return v.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), v.begin());
}

} // namespace

class TestContextWindow : public QObject {
    Q_OBJECT
    std::unique_ptr<arbor::Model> model_;
    std::unique_ptr<arbor::ChatFormatter> formatter_;

    ChatMessage user(int turn, int words = 30) const {
        std::string text = "Question " + std::to_string(turn) + ":";
        for (int i = 0; i < words; ++i) text += " word" + std::to_string(i);
        return {Role::User, formatter_->encode_content(text)};
    }
    ChatMessage reply(int turn) const {
        return {Role::Assistant, formatter_->encode_content("Answer " + std::to_string(turn) + " is short.")};
    }
    ChatMessage system() const { return {Role::System, formatter_->encode_content("You are a careful pirate.")}; }

    // A conversation of `turns` answered turns and a new question.
    std::vector<ChatMessage> history(int turns, int words = 30) const {
        std::vector<ChatMessage> h;
        for (int t = 0; t < turns; ++t) {
            h.push_back(user(t, words));
            h.push_back(reply(t));
        }
        h.push_back(user(turns, words));
        return h;
    }

    std::vector<TokenId> compose(const std::vector<ChatMessage>& h, int from) const {
        std::vector<ChatMessage> chat{system()};
        chat.insert(chat.end(), h.begin() + from, h.end());
        return formatter_->compose(chat);
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        model_ = arbor::Model::load(arbor::test::model_path());
        formatter_ = std::make_unique<arbor::ChatFormatter>(
            model_->tokenizer(), arbor::detect_chat_template(model_->chat_template_source()));
    }

    void shortConversationIsWhole() {
        const auto h = history(2);
        const auto w = fitContext(*formatter_, system(), h, 0, kContext, kReserve);
        QVERIFY(w.error.empty());
        QCOMPARE(w.omitted, 0);
        QCOMPARE(w.prompt, compose(h, 0));
    }

    // Candidates start turns, fall a quarter of the context apart (in message content),
    // and a longer history keeps every earlier one.
    void candidatesAreTurnStartsAQuarterApart() {
        const auto longest = history(40);
        const auto all = contextCutCandidates(longest, kContext / 4);
        QVERIFY(all.size() > 4);
        QCOMPARE(all.front(), 0);
        QCOMPARE(all.back(), int(longest.size()) - 1);
        for (size_t i = 1; i + 1 < all.size(); ++i) {
            QCOMPARE(longest[size_t(all[i])].role, Role::User);
            size_t content = 0;
            for (int m = all[i - 1]; m < all[i]; ++m) content += longest[size_t(m)].content.size();
            QVERIFY2(content >= kContext / 4, qPrintable(QString::number(content)));
        }
        for (int turns = 1; turns < 40; ++turns) {
            const auto shorter = contextCutCandidates(history(turns), kContext / 4);
            // All but its last (the newest message) are the longest history's first ones.
            QVERIFY(std::equal(shorter.begin(), shorter.end() - 1, all.begin()));
        }
    }

    // A conversation growing turn by turn: never an error, the newest message and the
    // system prompt kept, whole turns left out, and the cut moves rarely, so most prompts
    // start with the previous prompt and its reply (what the prefix cache holds).
    void growingConversationKeepsAStableCut() {
        int lastCut = 0, moves = 0, extended = 0, overflowed = 0;
        std::vector<TokenId> previous;
        for (int turns = 0; turns < 40; ++turns) {
            const auto h = history(turns, 8);
            const auto w = fitContext(*formatter_, system(), h, 0, kContext, kReserve);
            QVERIFY2(w.error.empty(), w.error.c_str());
            QVERIFY(int(w.prompt.size()) + kReserve <= kContext);
            QCOMPARE(w.omitted % 2, 0);  // whole turns
            QVERIFY(w.omitted < int(h.size()));
            QCOMPARE(w.prompt, compose(h, w.omitted));
            // Nothing more was left out than needed: one candidate earlier does not fit.
            const auto cuts = contextCutCandidates(h, kContext / 4);
            const auto at = std::find(cuts.begin(), cuts.end(), w.omitted);
            QVERIFY(at != cuts.end());
            if (at != cuts.begin()) QVERIFY(int(compose(h, *(at - 1)).size()) + kReserve > kContext);
            QVERIFY(w.omitted >= lastCut);
            if (w.omitted > 0) ++overflowed;
            if (w.omitted != lastCut) {
                ++moves;
            } else if (turns > 0) {
                std::vector<TokenId> grown = formatter_->follow_up_prefix(previous, reply(turns - 1).content);
                QVERIFY(startsWith(w.prompt, grown));
                ++extended;
            }
            lastCut = w.omitted;
            previous = w.prompt;
        }
        QVERIFY2(overflowed > 20, qPrintable(QString::number(overflowed)));
        // Each move frees about a quarter of the context, several turns here: the cut
        // stays put for at least two turns in three.
        QVERIFY2(moves > 2 && moves * 2 < extended, qPrintable(QString("%1 moves, %2 kept").arg(moves).arg(extended)));
    }

    // The ids of a continued reply count against the context like the prompt.
    void tailCountsAgainstTheContext() {
        const auto h = history(6);
        const auto without = fitContext(*formatter_, system(), h, 0, kContext, kReserve);
        const auto with = fitContext(*formatter_, system(), h, 200, kContext, kReserve);
        QVERIFY(with.error.empty());
        QVERIFY(with.omitted > without.omitted);
        QVERIFY(int(with.prompt.size()) + 200 + kReserve <= kContext);
    }

    // A newest message that leaves no room for the whole reserve goes alone; one that
    // does not fit at all is an error naming the context.
    void newestMessageAloneOrAnError() {
        auto h = history(3, 100);
        const auto alone = fitContext(*formatter_, system(), h, 0, kContext, kContext / 2);
        QVERIFY(alone.error.empty());
        QCOMPARE(alone.omitted, int(h.size()) - 1);
        QCOMPARE(alone.prompt, compose(h, int(h.size()) - 1));
        QVERIFY(int(alone.prompt.size()) + kContext / 2 > kContext);

        h.push_back(reply(3));
        h.push_back(user(4, 600));
        const auto refused = fitContext(*formatter_, system(), h, 0, kContext, kReserve);
        QVERIFY(refused.prompt.empty());
        QVERIFY2(QString::fromStdString(refused.error).contains("the context holds 512"), refused.error.c_str());
    }
};

QTEST_GUILESS_MAIN(TestContextWindow)

#include "test_context_window.moc"
