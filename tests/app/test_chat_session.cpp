// A chat session (one tab) end to end: the real default model, a real database in a
// temporary directory, and a second connection to that file reading what the session
// wrote, as another process would. Replies are kept short (maxTokens 24) except where a
// reply must stream for a while. QAbstractItemModelTester watches the messages model of
// every session throughout.
// Ending a turn early and the GUI thread's share are in test_chat_session_ending.cpp.
#include "chat_session_fixture.h"
#include "conversation_prompt.h"

#include "../model/synthetic_model_files.h"

#include <limits>

class TestChatSession : public ChatSessionFixture {
    Q_OBJECT

private slots:
    void initTestCase() { initFixture(); }
    void init() { initDatabase(); }
    void cleanup() { closeDatabase(); }

    void sendStoresTheTurnAndTitlesTheConversation() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        QSignalSpy retitled(s.get(), &ChatSession::retitled);
        const QString question = "What is the capital of France?\nAnswer in one word.";
        const qint64 id = reply(*s, [&] {
            const bool ok = s->send(question);
            return ok && s->generating();
        });
        QVERIFY(id != 0);
        QVERIFY(!s->generating());
        QVERIFY(s->error().isEmpty());

        auto store = reader();
        QCOMPARE(store->conversation(conv_).title, std::string("What is the capital of France?"));  // first line
        QCOMPARE(s->title(), QString("What is the capital of France?"));
        QCOMPARE(retitled.size(), 1);
        const auto path = store->path(id);
        QCOMPARE(int(path.size()), 2);
        QCOMPARE(path[0].role, arbor::Role::User);
        QCOMPARE(path[0].text, question.toStdString());
        QCOMPARE(ids(path[0].token_ids), formatter().encode_content(question.toStdString()));
        QVERIFY(!path[0].parent_id);
        QCOMPARE(path[1].parent_id, std::optional<arbor::MessageId>(path[0].id));
        checkReply(path[1], int(expectedPrompt(*store, path[0].id).size()));

        const auto* model = s->messages();
        QCOMPARE(model->rowCount(), 2);
        compareRow(*model, 0, path[0]);
        compareRow(*model, 1, path[1]);
        QCOMPARE(arbor::app::storedFinishReason(model->row(1).stats.finishReason, model->row(1).stats.error),
                 path[1].stats.finish_reason);

        // A second message does not retitle.
        QVERIFY(reply(*s, [&] { return s->send("And of Italy?"); }) != 0);
        QCOMPARE(retitled.size(), 1);
        QCOMPARE(s->title(), QString("What is the capital of France?"));
        QCOMPARE(reader()->conversation(conv_).title, std::string("What is the capital of France?"));
    }

    void contextCountsTheRowsAfterTheLastMeasuredReply() {
        // As a killed app leaves it: a measured turn, then a question and a reply cut off
        // mid-stream, without stats.
        {
            arbor::Store store(file_);
            const std::vector<std::int32_t> five{1, 2, 3, 4, 5}, seven{1, 2, 3, 4, 5, 6, 7}, four{1, 2, 3, 4},
                three{1, 2, 3};
            const auto u1 = store.add_message(conv_, std::nullopt, arbor::Role::User, "one", five);
            const auto a1 = store.add_message(conv_, u1, arbor::Role::Assistant, "two", seven,
                                              arbor::MessageState::streaming);
            arbor::MessageStats measured;
            measured.prompt_tokens = 40;
            store.finish_message(a1, arbor::MessageState::complete, measured);
            const auto u2 = store.add_message(conv_, a1, arbor::Role::User, "three", four);
            store.add_message(conv_, u2, arbor::Role::Assistant, "fo", three, arbor::MessageState::streaming);
        }
        auto s = session();
        QVERIFY(s);
        QCOMPARE(s->messages()->rowCount(), 4);
        QCOMPARE(s->contextTokens(), 40 + 7 + 4 + 3);
    }

    void longFirstMessageMakesAShortTitle() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        const QString text = "   Please   explain how a refrigerator keeps food cold, step by step, in detail.";
        QVERIFY(reply(*s, [&] { return s->send(text); }) != 0);
        // The first line, spaces folded, cut to 47 characters and an ellipsis.
        const QString title = QString::fromUtf8("Please explain how a refrigerator keeps food co\u2026");
        QCOMPARE(title.size(), 48);
        QCOMPARE(s->title(), title);
        QCOMPARE(QString::fromStdString(reader()->conversation(conv_).title), title);
    }

    void followUpPromptExtendsThePreviousOne() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        const qint64 first = reply(*s, [&] { return s->send("Name three colors."); });
        QVERIFY(first != 0);
        // The user takes a moment to type: the warm-up of the next turn's opening is done.
        models_.current()->engine->wait_idle();
        const qint64 second = reply(*s, [&] { return s->send("Name three more."); });
        QVERIFY(second != 0);

        auto store = reader();
        const auto path = store->path(second);
        QCOMPARE(int(path.size()), 4);
        QCOMPARE(path[1].id, first);
        const int firstPrompt = *path[1].stats.prompt_tokens;
        const auto prompt = expectedPrompt(*store, path[2].id);
        checkReply(path[3], int(prompt.size()));
        // The second prompt starts with the first prompt and the reply's own ids, so the
        // engine reuses their KV (all but the page still being filled at most).
        const auto firstIds = expectedPrompt(*store, path[0].id);
        QVERIFY(std::equal(firstIds.begin(), firstIds.end(), prompt.begin()));
        QVERIFY(std::equal(path[1].token_ids.begin(), path[1].token_ids.end(), prompt.begin() + firstIds.size()));
        QCOMPARE(int(firstIds.size()), firstPrompt);
        // Everything up to the user's new words was in the cache: the previous prompt, the
        // reply and, computed after the reply, its end of turn and the next user header.
        const auto warmed = formatter().follow_up_prefix(firstIds, path[1].token_ids);
        QVERIFY(std::equal(warmed.begin(), warmed.end(), prompt.begin()));
        const int cached = *path[3].stats.cached_tokens;
        QVERIFY2(cached == int(warmed.size()),
                 qPrintable(QString("cached %1 of %2; warmed prefix %3").arg(cached).arg(prompt.size()).arg(warmed.size())));

        const auto* model = s->messages();
        QCOMPARE(model->rowCount(), 4);
        for (int i = 0; i < 4; ++i) compareRow(*model, i, path[size_t(i)]);
    }

    // Loads into `service` a copy of the default model whose template refuses more than two
    // exchanges, and waits until it is ready.
    void loadRefusing(ModelService& service) const {
        const auto copy = std::filesystem::path(dir_.path().toStdString()) / "SmolLM2-refusing-template.gguf";
        if (!std::filesystem::exists(copy))
            arbor::test::write_default_model_with_template(
                copy, "{% if messages | length > 4 %}{{ raise_exception('Two exchanges at most') }}"
                      "{% endif %}{% for m in messages %}"
                      "<|im_start|>{{ m['role'] }}{% if loop.last %} (latest){% endif %}\n"
                      "{{ m['content'] }}<|im_end|>\n{% endfor %}"
                      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
        service.load(QString::fromStdString(copy.string()), 2, 64);
        QTRY_COMPARE_WITH_TIMEOUT(service.state(), QString("ready"), kWaitMs);
    }

    // A model whose own template is rendered whole (as Nemo's: this one marks the last
    // message, so its turns are no fixed pieces) and refuses some conversations (Nemo's
    // unless roles alternate; this one past two exchanges): those turns are composed in the
    // family's format, and the session says so for the turn (ChatView shows it).
    void aTemplateRefusingTheConversationIsNoted() {
        ModelService refusing;
        loadRefusing(refusing);
        auto s = session(refusing);
        QVERIFY(s);
        saveSmall(*s);
        QSignalSpy noted(s.get(), &ChatSession::formatNoteChanged);
        QVERIFY(reply(*s, [&] { return s->send("Name a color."); }) != 0);
        QVERIFY(reply(*s, [&] { return s->send("Name another."); }) != 0);
        QCOMPARE(noted.size(), 0);
        QVERIFY(reply(*s, [&] { return s->send("And one more."); }) != 0);
        QCOMPARE(noted.size(), 1);
        QVERIFY2(s->formatNote().contains("Two exchanges at most") && s->formatNote().contains("ChatML format"),
                 qPrintable(s->formatNote()));
        // Editing the first message starts a branch of one exchange: the template's again.
        QVERIFY(reply(*s, [&] { return s->edit(0, "Name a fruit."); }) != 0);
        QCOMPARE(noted.size(), 2);
        QCOMPARE(s->formatNote(), QString());
        // The note belongs to the turn just composed: shown again after a new turn on the
        // long branch, gone when another branch is shown.
        s->messages()->previousBranch(0);
        QTRY_COMPARE_WITH_TIMEOUT(s->messages()->rowCount(), 6, kWaitMs);
        QVERIFY(reply(*s, [&] { return s->send("One last color."); }) != 0);
        QCOMPARE(noted.size(), 3);
        QVERIFY(s->formatNote().contains("Two exchanges at most"));
        s->messages()->nextBranch(0);
        QTRY_COMPARE_WITH_TIMEOUT(s->messages()->rowCount(), 2, kWaitMs);
        QCOMPARE(s->formatNote(), QString());
        QCOMPARE(noted.size(), 4);
    }

    // After a turn the template refused, the next turn's opening (the family's follow-up:
    // the refused prompt, the reply, its end of turn and the next user header) is warmed as
    // after any turn, and a restored tab's warm-up computes the same (both use
    // follow_up_prefix, which was empty here): the next prompt computes only the new words.
    void aRefusedTurnsFollowUpIsWarmed() {
        ModelService refusing;
        loadRefusing(refusing);
        auto s = session(refusing);
        QVERIFY(s);
        saveSmall(*s);
        for (const char* question : {"Name a color.", "Name another.", "And one more."})
            QVERIFY(reply(*s, [&] { return s->send(question); }) != 0);
        QVERIFY(s->formatNote().contains("Two exchanges at most"));
        refusing.current()->engine->wait_idle();
        const qint64 fourth = reply(*s, [&] { return s->send("Yet another."); });
        QVERIFY(fourth != 0);

        auto store = reader();
        const auto path = store->path(fourth);
        QCOMPARE(int(path.size()), 8);
        const arbor::ChatFormatter& f = *refusing.current()->formatter;
        const auto warmed = f.follow_up_prefix(arbor::app::conversationChat(*store, f, conv_, path[4].id), ids(path[5].token_ids));
        QVERIFY(!warmed.empty());
        const int cached = *path[7].stats.cached_tokens, prompt = *path[7].stats.prompt_tokens;
        QVERIFY2(cached == int(warmed.size()),
                 qPrintable(QString("cached %1 of %2; warmed prefix %3").arg(cached).arg(prompt).arg(warmed.size())));
    }

    void regenerateMakesASiblingReply() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        const qint64 first = reply(*s, [&] { return s->send("Say something nice."); });
        QVERIFY(first != 0);
        const QString firstText = s->messages()->row(1).text;
        QSignalSpy leaf(s.get(), &ChatSession::leafChanged);
        const qint64 second = reply(*s, [&] { return s->regenerate(1); });
        QVERIFY(second != 0 && second != first);
        QVERIFY(leaf.size() >= 1);

        auto store = reader();
        const auto user = store->path(first).front();
        const auto replies = store->children(user.id);
        QCOMPARE(int(replies.size()), 2);
        QCOMPARE(replies[0].id, first);
        QCOMPARE(replies[1].id, second);
        QCOMPARE(int(store->roots(conv_).size()), 1);  // no new user message
        checkReply(replies[1], *replies[0].stats.prompt_tokens);  // the same prompt again

        auto* model = s->messages();
        QTRY_COMPARE_WITH_TIMEOUT(model->rowCount(), 2, kWaitMs);
        QCOMPARE(model->row(1).id, second);
        QCOMPARE(model->row(1).branchIndex, 1);
        QCOMPARE(model->row(1).branchCount, 2);
        QCOMPARE(model->row(0).branchCount, 1);
        compareRow(*model, 1, replies[1]);

        QSignalSpy loaded(model, &MessageListModel::loaded);
        model->previousBranch(1);
        QVERIFY(loaded.wait(kWaitMs));
        QCOMPARE(model->row(1).id, first);
        QCOMPARE(model->row(1).text, firstText);
        QCOMPARE(model->row(1).branchIndex, 0);
        QCOMPARE(model->row(1).branchCount, 2);
        model->nextBranch(1);
        QVERIFY(loaded.wait(kWaitMs));
        QCOMPARE(model->row(1).id, second);

        QVERIFY(!s->regenerate(0));  // a user message
        QVERIFY(!s->error().isEmpty());
        QVERIFY(!s->regenerate(7));
        QVERIFY(!s->generating());
        QCOMPARE(int(reader()->children(user.id).size()), 2);
    }

    void editMakesASiblingTurn() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        const qint64 first = reply(*s, [&] { return s->send("Name a fruit."); });
        QVERIFY(first != 0);
        const qint64 second = reply(*s, [&] { return s->edit(0, "Name a vegetable."); });
        QVERIFY(second != 0);

        auto store = reader();
        const auto roots = store->roots(conv_);
        QCOMPARE(int(roots.size()), 2);  // both versions of the message are kept
        QCOMPARE(roots[0].text, std::string("Name a fruit."));
        QCOMPARE(roots[1].text, std::string("Name a vegetable."));
        QCOMPARE(int(store->children(roots[0].id).size()), 1);
        QCOMPARE(store->children(roots[0].id)[0].id, first);
        const auto edited = store->children(roots[1].id);
        QCOMPARE(int(edited.size()), 1);
        QCOMPARE(edited[0].id, second);
        checkReply(edited[0], int(expectedPrompt(*store, roots[1].id).size()));
        QCOMPARE(store->conversation(conv_).title, std::string("Name a fruit."));  // titled once

        auto* model = s->messages();
        QCOMPARE(model->rowCount(), 2);
        compareRow(*model, 0, roots[1]);
        compareRow(*model, 1, edited[0]);
        QCOMPARE(model->row(0).branchIndex, 1);
        QCOMPARE(model->row(0).branchCount, 2);
        QSignalSpy loaded(model, &MessageListModel::loaded);
        model->previousBranch(0);
        QVERIFY(loaded.wait(kWaitMs));
        QCOMPARE(model->row(0).text, QString("Name a fruit."));
        QCOMPARE(model->row(1).id, first);

        QVERIFY(!s->edit(1, "a reply is not mine"));
        QVERIFY(!s->error().isEmpty());
        QVERIFY(!s->edit(0, "   "));
        QCOMPARE(int(reader()->roots(conv_).size()), 2);
    }

    void readersSeeTheReplyGrowWhileItStreams() {
        auto s = session();
        QVERIFY(s);
        QCOMPARE(s->saveSettings(kLongSettings), QString());
        QSignalSpy finished(s.get(), &ChatSession::replyFinished);
        QVERIFY(s->send(kLongAnswer));
        QVERIFY(QTest::qWaitFor([&] { return s->messages()->rowCount() == 2; }, kWaitMs));
        const qint64 id = s->messages()->row(1).id;
        QCOMPARE(s->messages()->row(1).role, arbor::Role::Assistant);

        // Samples of what the view shows and what another connection reads, while the
        // reply streams (at most 2.5 s of it).
        struct Sample {
            qint64 t;
            int shown, stored;
        };
        QList<Sample> samples;
        auto store = reader();
        QElapsedTimer clock;
        clock.start();
        int growths = 0, lastStored = 0;
        bool prefix = true;  // the database holds a beginning of what the view shows
        qint64 streamed = 0;  // how long the store showed the reply as streaming
        while (finished.isEmpty() && clock.elapsed() < 2500) {
            const auto m = store->message(id);
            if (m.state != arbor::MessageState::streaming) break;
            const QString storedText = QString::fromStdString(m.text);
            const int row = s->messages()->rowOf(id);
            const QString shownText = row >= 0 ? s->messages()->row(row).text : QString();
            prefix &= shownText.startsWith(storedText);
            const int stored = int(storedText.size()), shown = int(shownText.size());
            samples.push_back({clock.elapsed(), shown, stored});
            streamed = samples.back().t;
            if (stored > lastStored) ++growths;
            lastStored = stored;
            QTest::qWait(50);
        }
        s->stop();
        if (finished.isEmpty()) QVERIFY(finished.wait(kWaitMs));
        QVERIFY(prefix);
        QVERIFY2(streamed >= 1000, qPrintable(QString("the reply streamed only %1 ms").arg(streamed)));
        // The partial text grew in the database at least once a second.
        QVERIFY2(growths >= int(streamed / 1000),
                 qPrintable(QString("the stored text grew %1 times in %2 ms of streaming").arg(growths).arg(streamed)));
        // Whatever the view showed a second ago is in the database now.
        for (const Sample& now : samples) {
            int due = 0;
            for (const Sample& then : samples)
                if (now.t - then.t >= 1000) due = std::max(due, then.shown);
            QVERIFY2(now.stored >= due, qPrintable(QString("at %1 ms the store had %2 characters, %3 were shown a second before")
                                                       .arg(now.t).arg(now.stored).arg(due)));
        }
        const auto m = store->message(id);
        QVERIFY(m.state != arbor::MessageState::streaming);
        compareRow(*s->messages(), 1, m);
    }

    void twoSessionsGenerateAtOnce() {
        auto first = session();
        QVERIFY(first);
        const qint64 firstConv = conv_;
        conv_ = reader()->create_conversation("");
        auto second = session();
        QVERIFY(second);
        saveSmall(*first);
        saveSmall(*second);
        QSignalSpy firstDone(first.get(), &ChatSession::replyFinished);
        QSignalSpy secondDone(second.get(), &ChatSession::replyFinished);
        QVERIFY(first->send("Name a planet."));
        QVERIFY(second->send("Name an ocean."));
        QVERIFY(firstDone.size() == 1 || firstDone.wait(kWaitMs));
        QVERIFY(secondDone.size() == 1 || secondDone.wait(kWaitMs));
        auto store = reader();
        for (auto [s, conv, done] : {std::tuple{first.get(), firstConv, &firstDone}, {second.get(), conv_, &secondDone}}) {
            const auto id = done->at(0).at(0).toLongLong();
            const auto path = store->path(id);
            QCOMPARE(int(path.size()), 2);
            QCOMPARE(path[1].conversation_id, conv);
            checkReply(path[1], int(expectedPrompt(*store, path[0].id).size()));
            QCOMPARE(s->messages()->rowCount(), 2);
            compareRow(*s->messages(), 1, path[1]);
        }
    }

    void promptTooLongIsAnError() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        QString text;
        for (int i = 0; i < 1000; ++i) text += QString("word%1 ").arg(i);  // far more than the context holds
        const qint64 id = reply(*s, [&] { return s->send(text); });
        QVERIFY(id != 0);
        QVERIFY(!s->generating());
        const auto m = reader()->message(id);
        QCOMPARE(m.state, arbor::MessageState::error);
        QVERIFY(m.text.empty());
        QVERIFY2(QString::fromStdString(m.stats.finish_reason).startsWith("error: ") &&
                     QString::fromStdString(m.stats.finish_reason).contains("context"),
                 m.stats.finish_reason.c_str());
        QVERIFY2(s->error().contains("context"), qPrintable(s->error()));
        QTRY_COMPARE_WITH_TIMEOUT(s->messages()->rowCount(), 2, kWaitMs);
        const auto& row = s->messages()->row(1);
        QCOMPARE(row.id, m.id);
        QVERIFY(row.text.isEmpty());
        QTRY_COMPARE(s->messages()->row(1).state, arbor::MessageState::error);
    }

    // A context of 512 tokens, outgrown within a few turns: never an error; each prompt
    // holds the system prompt and the newest whole turns with room for the reply, the
    // newest message always; the cut stays put on the turn after it first moved, whose
    // history then comes from the prefix cache.
    void overflowLeavesOutTheOldestTurnsAndKeepsTheCache() {
        ModelService small;
        small.load(QString::fromStdString(arbor::test::model_path().string()), 2, 64, 0, QStringLiteral("f16"), 512);
        QTRY_COMPARE_WITH_TIMEOUT(small.state(), QString("ready"), kWaitMs);
        QCOMPARE(small.contextSize(), 512);
        auto s = session(small);
        QVERIFY(s);
        QCOMPARE(s->saveSettings({{"maxTokens", kShortReply}, {"temperature", 0.0},
                                  {"systemPrompt", "You are a terse pirate."}}),
                 QString());
        int firstOverflow = -1, lastOmitted = 0, lastPrompt = 0;
        for (int turn = 0; turn < 16; ++turn) {
            QString text = QString("Question %1 about the sea:").arg(turn);
            for (int w = 0; w < 12; ++w) text += QString(" wave%1").arg(w);
            const qint64 id = reply(*s, [&] { return s->send(text); });
            QVERIFY(id != 0);
            QCOMPARE(s->error(), QString());
            auto store = reader();
            const arbor::Message m = store->message(id);
            QCOMPARE(m.state, arbor::MessageState::complete);
            const auto path = store->path(*m.parent_id);
            QCOMPARE(path.back().text, text.toStdString());
            const int omitted = m.stats.omitted_messages.value_or(0);
            QCOMPARE(s->omittedMessages(), omitted);
            QVERIFY(omitted < int(path.size()));  // the newest message is in
            QCOMPARE(omitted % 2, 0);             // whole turns
            QCOMPARE(path[size_t(omitted)].role, arbor::Role::User);
            const int prompt = *m.stats.prompt_tokens;
            QCOMPARE(prompt, int(expectedPrompt(*store, path.back().id, omitted).size()));  // system prompt included
            QVERIFY2(prompt + kShortReply <= 512, qPrintable(QString::number(prompt)));
            QVERIFY(omitted >= lastOmitted);
            if (firstOverflow < 0) {
                if (omitted > 0) {
                    firstOverflow = turn;
                    // Left out because the whole conversation no longer fit.
                    QVERIFY(int(expectedPrompt(*store, path.back().id).size()) + kShortReply > 512);
                }
            } else {
                // The turn after the first overflow: same cut, its history from the cache
                // (the previous prompt and reply, which the warm-up extended).
                QCOMPARE(omitted, lastOmitted);
                QVERIFY2(*m.stats.cached_tokens >= lastPrompt, qPrintable(QString("%1 cached, previous prompt %2")
                                                                          .arg(*m.stats.cached_tokens).arg(lastPrompt)));
                qInfo("turn %d left out %d messages; turn %d: %d of %d prompt tokens from the cache", firstOverflow,
                      omitted, turn, *m.stats.cached_tokens, prompt);
                break;
            }
            lastOmitted = omitted;
            lastPrompt = prompt;
        }
        QVERIFY2(firstOverflow > 0, "the conversation never outgrew the context");
        QCOMPARE(s->messages()->rowCount(), 2 * (firstOverflow + 2));
        s.reset();
        // Reopened, the session tells where the context starts from the last reply.
        auto again = session(small);
        QVERIFY(again);
        QCOMPARE(again->omittedMessages(), lastOmitted);
    }

    void refusesWhatItCannotStart() {
        auto s = session();
        QVERIFY(s);
        QCOMPARE(s->saveSettings({{"maxTokens", 200}}), QString());
        QSignalSpy errors(s.get(), &ChatSession::errorChanged);
        QVERIFY(!s->send("   "));  // nothing to send
        QVERIFY(s->send("Tell me about the moon."));
        QVERIFY(s->generating());
        QVERIFY(!s->send("And the sun?"));  // while a reply is being generated
        QVERIFY(s->error().contains("still being generated"));
        QVERIFY(!s->regenerate(1));
        QVERIFY(!s->edit(0, "changed"));
        QVERIFY(errors.size() >= 1);
        QSignalSpy finished(s.get(), &ChatSession::replyFinished);
        s->stop();
        QVERIFY(finished.wait(kWaitMs));
        QCOMPARE(int(reader()->roots(conv_).size()), 1);
        QCOMPARE(int(reader()->path(*reader()->latest_leaf(conv_)).size()), 2);

        ModelService none;
        auto idle = session(none);
        QVERIFY(idle);
        QVERIFY(!idle->send("Anyone there?"));
        QCOMPARE(idle->error(), QString("no model is loaded"));
        QVERIFY(!idle->generating());
        QCOMPARE(int(reader()->path(*reader()->latest_leaf(conv_)).size()), 2);  // nothing stored
        // A successful start clears the error.
        QVERIFY(s->send("Thanks."));
        QVERIFY(s->error().isEmpty());
        QSignalSpy done(s.get(), &ChatSession::replyFinished);
        s->stop();
        QVERIFY(done.wait(kWaitMs));
    }

    // Settings saved right after open(), before its read of the stored ones comes back
    // (as after Ctrl+N), are not overwritten by that older read.
    void settingsSavedWhileOpeningAreKept() {
        ChatSession s(conv_, *service_, models_);
        QSignalSpy opened(&s, &ChatSession::opened);
        s.open();
        QCOMPARE(s.saveSettings({{"maxTokens", kShortReply}}), QString());
        QVERIFY(opened.wait(kWaitMs));
        QCOMPARE(s.maxTokens().toInt(), kShortReply);
        QTRY_COMPARE(reader()->conversation(conv_).settings.max_tokens, std::optional<int>(kShortReply));
    }

    void settingsAreValidatedAndKept() {
        auto s = session();
        QVERIFY(s);
        QVERIFY(!s->temperature().isValid());  // all defaults at first
        QVERIFY(!s->maxTokens().isValid());
        QVERIFY(s->systemPrompt().isEmpty());
        QSignalSpy changed(s.get(), &ChatSession::settingsChanged);

        const QVariantMap good{{"systemPrompt", "You are a pirate."}, {"temperature", 0.2}, {"topP", "0.5"},
                               {"topK", 10}, {"maxTokens", kShortReply}};
        QCOMPARE(s->saveSettings(good), QString());
        QCOMPARE(changed.size(), 1);
        QCOMPARE(s->systemPrompt(), QString("You are a pirate."));
        QCOMPARE(s->temperature().toDouble(), 0.2);
        QCOMPARE(s->topP().toDouble(), 0.5);
        QCOMPARE(s->topK().toInt(), 10);
        QCOMPARE(s->maxTokens().toInt(), kShortReply);

        auto rejected = [&](const QVariantMap& bad, const char* key) {
            const QString error = s->saveSettings(bad);
            QVERIFY2(error.contains(key), qPrintable(error));
        };
        rejected({{"temperature", 3}}, "temperature");
        rejected({{"temperature", "abc"}}, "temperature");
        rejected({{"temperature", -0.1}}, "temperature");
        rejected({{"topP", 1.5}}, "topP");
        rejected({{"topK", 2.5}}, "topK");
        rejected({{"topK", -1}}, "topK");
        rejected({{"maxTokens", 0}}, "maxTokens");
        rejected({{"maxTokens", "lots"}}, "maxTokens");
        QCOMPARE(changed.size(), 1);  // nothing changed by a rejected save
        QCOMPARE(s->temperature().toDouble(), 0.2);
        QCOMPARE(s->maxTokens().toInt(), kShortReply);

        // The system prompt goes in front of the conversation.
        const qint64 id = reply(*s, [&] { return s->send("Hello!"); });
        QVERIFY(id != 0);
        {
            auto store = reader();
            const auto path = store->path(id);
            QCOMPARE(int(path.size()), 2);  // the system prompt is a setting, not a message
            const auto prompt = expectedPrompt(*store, path[0].id);
            const auto withoutSystem = formatter().compose({{arbor::Role::User, ids(path[0].token_ids)}});
            QVERIFY(prompt.size() > withoutSystem.size());
            checkReply(path[1], int(prompt.size()));
        }

        // Empty values mean "the default"; other keys keep what was given.
        QCOMPARE(s->saveSettings({{"systemPrompt", "Be brief."}, {"temperature", ""}, {"topP", QVariant()},
                                  {"topK", 5}, {"maxTokens", " 32 "}}),
                 QString());
        QVERIFY(!s->temperature().isValid());
        QVERIFY(!s->topP().isValid());
        arbor::ConversationSettings expected;
        expected.system_prompt = "Be brief.";
        expected.top_k = 5;
        expected.max_tokens = 32;
        QTRY_VERIFY_WITH_TIMEOUT(reader()->conversation_settings(conv_) == expected, kWaitMs);

        auto again = session();  // a new session on the same conversation reads them back
        QVERIFY(again);
        QCOMPARE(again->systemPrompt(), QString("Be brief."));
        QVERIFY(!again->temperature().isValid());
        QVERIFY(!again->topP().isValid());
        QCOMPARE(again->topK().toInt(), 5);
        QCOMPARE(again->maxTokens().toInt(), 32);
        QCOMPARE(again->title(), QString("Hello!"));
        QCOMPARE(again->messages()->rowCount(), 2);
    }
};

QTEST_GUILESS_MAIN(TestChatSession)
#include "test_chat_session.moc"
