import QtQuick
import QtTest
import Arbor.Core
import Arbor.Ui

TestCase {
    id: test
    name: "MessageBubble"
    when: windowShown
    visible: true  // TestCase hides itself by default; hidden items get no clicks
    width: 700
    height: 500

    Component {
        id: bubbleComponent
        MessageBubble { width: 600; app: testApp }
    }

    // The chat's list of bubbles over a real conversation, as ChatView has it.
    Component {
        id: chatComponent
        ListView {
            id: chatList
            property ChatSession chat
            width: 600
            height: 400
            model: chat ? chat.messages : null
            delegate: MessageBubble { width: 600; app: testApp; session: chatList.chat }
        }
    }

    function collect(item, name, out) {
        if (item.objectName === name) out.push(item)
        for (let i = 0; i < item.children.length; ++i) collect(item.children[i], name, out)
        return out
    }
    function visibleNamed(item, name) { return collect(item, name, []).filter(i => i.visible) }
    function buttonsWithText(item, text, out) {
        if (item.text === text && item.clicked !== undefined && item.visible) out.push(item)
        for (let i = 0; i < item.children.length; ++i) buttonsWithText(item.children[i], text, out)
        return out
    }

    property var session: null
    function initTestCase() {
        tryVerify(() => testApp.started, 30000)
        testApp.tabs.newConversation()
        tryVerify(() => testApp.tabs.current !== null, 10000)
        session = testApp.tabs.current
    }

    function make(row) {
        return createTemporaryObject(bubbleComponent, test, {
            index: 0, session: test.session,
            model: Object.assign({ id: 1, role: MessageRole.Assistant, text: "", state: MessageState.Complete,
                                   stats: testStats.make({}),
                                   branchIndex: 0, branchCount: 1 }, row) })
    }

    function test_replyShowsStatsAndRegenerate() {
        const bubble = make({ text: "Hello **there**", stats: testStats.make({ tokensPerSecond: 12.46, timeToFirstTokenMs: 80.4,
                              promptTokens: 120, cachedTokens: 96, diskTokens: 64, finishReason: ReplyStats.Stop }) })
        waitForRendering(bubble)
        const stats = visibleNamed(bubble, "statsLabel")
        compare(stats.length, 1)
        compare(stats[0].text, "12.5 tokens/s  ·  first token 80 ms  ·  120 prompt tokens: 32 from memory, 64 from disk, 24 computed")
        compare(buttonsWithText(bubble, "Regenerate", []).length, 1)
        compare(buttonsWithText(bubble, "Edit", []).length, 0)
        compare(visibleNamed(bubble, "branchLabel").length, 0)  // no siblings, no navigation
    }

    function test_streamingReplyHasNoRegenerate() {
        const bubble = make({ text: "partial", state: MessageState.Streaming })
        compare(buttonsWithText(bubble, "Regenerate", []).length, 0)
        compare(visibleNamed(bubble, "statsLabel")[0].text, "generating…")
    }

    function test_branchNavigation() {
        const bubble = make({ role: MessageRole.User, text: "question", branchIndex: 1, branchCount: 3 })
        waitForRendering(bubble)
        const label = visibleNamed(bubble, "branchLabel")
        compare(label.length, 1)
        compare(label[0].text, "2/3")
        compare(label[0].Accessible.name, "Version 2 of 3")
        compare(buttonsWithText(bubble, "Edit", []).length, 1)
        compare(buttonsWithText(bubble, "Regenerate", []).length, 0)
        compare(visibleNamed(bubble, "userText")[0].text, "question")
    }

    function test_editModeShowsEditor() {
        const bubble = make({ role: MessageRole.User, text: "first version" })
        mouseClick(buttonsWithText(bubble, "Edit", [])[0])
        verify(bubble.editing)
        const editor = visibleNamed(bubble, "editField")
        compare(editor.length, 1)
        compare(editor[0].text, "first version")
        mouseClick(buttonsWithText(bubble, "Cancel", [])[0])
        verify(!bubble.editing)
    }

    function test_stopStatsShowReason() {
        const bubble = make({ text: "cut", state: MessageState.Stopped, stats: testStats.make({ promptTokens: 10,
                              cachedTokens: 0, finishReason: ReplyStats.Cancelled }) })
        compare(visibleNamed(bubble, "statsLabel")[0].text, "10 prompt tokens: 0 from memory, 0 from disk, 10 computed  ·  cancelled")
    }

    // A reply that stopped at max tokens says so and, as the last message, offers Continue.
    function test_replyCutAtLengthOffersContinue() {
        const bubble = make({ text: "cut", stats: testStats.make({ finishReason: ReplyStats.Length }) })
        compare(visibleNamed(bubble, "statsLabel")[0].text, "stopped at max tokens")
        compare(visibleNamed(bubble, "continueButton").length, 0)  // not the last message
        bubble.isLast = true
        compare(visibleNamed(bubble, "continueButton").length, 1)
        const stopped = make({ text: "cut", stats: testStats.make({ finishReason: ReplyStats.Stop }) })
        stopped.isLast = true
        compare(visibleNamed(stopped, "continueButton").length, 0)
    }

    // A reply that filled the model's context says so, not "max tokens"; it has no room
    // to go on, so it offers no Continue.
    function test_replyAtFullContextSaysSo() {
        const bubble = make({ text: "cut", stats: testStats.make({ finishReason: ReplyStats.ContextFull }) })
        bubble.isLast = true
        compare(visibleNamed(bubble, "statsLabel")[0].text, "stopped: the context is full")
        compare(visibleNamed(bubble, "continueButton").length, 0)
    }

    // A reply cut off by a crash or kill has no figures; it says what happened.
    function test_interruptedReplySaysSo() {
        const bubble = make({ text: "", state: MessageState.Stopped })
        compare(visibleNamed(bubble, "statsLabel")[0].text, "interrupted: the app closed before this reply finished")
    }

    // A short message of the user gets a card as wide as its text; a long one is cut to
    // its start, at most 80% of the width, until "Show more".
    function test_userCardFitsShortText() {
        const bubble = make({ role: MessageRole.User, text: "Hi" })
        waitForRendering(bubble)
        const card = visibleNamed(bubble, "userCard")[0]
        compare(card.width, 240)
        compare(visibleNamed(bubble, "showMoreButton").length, 0)
        const wide = make({ role: MessageRole.User, text: "word ".repeat(200) })
        waitForRendering(wide)
        compare(visibleNamed(wide, "userCard")[0].width, 600 * 0.8)
        compare(visibleNamed(wide, "showMoreButton").length, 0)  // 1,000 characters: shown whole
    }

    function test_longUserMessageIsCollapsed_data() {
        return [
            { tag: "many characters", text: "word ".repeat(2000), shown: "word ".repeat(240) + "…" },
            { tag: "many lines", text: "line\n".repeat(40), shown: "line\n".repeat(15) + "line…" },
            { tag: "emoji not split", text: "a" + "😀".repeat(1000), shown: "a" + "😀".repeat(599) + "…" },
        ]
    }
    function test_longUserMessageIsCollapsed(data) {
        const bubble = make({ role: MessageRole.User, text: data.text })
        waitForRendering(bubble)
        const text = visibleNamed(bubble, "userText")[0]
        compare(text.text, data.shown)
        const more = visibleNamed(bubble, "showMoreButton")
        compare(more.length, 1)
        verify(more[0].text.startsWith("Show more"))
        const collapsedHeight = bubble.height
        mouseClick(more[0])
        compare(text.text, data.text)
        tryVerify(() => bubble.height > collapsedHeight)
        compare(more[0].text, "Show less")
        mouseClick(more[0])
        compare(text.text, data.shown)
    }

    // A reply streamed by the model: the bubble's markdown takes the pieces, and nothing
    // else in it follows the whole text per token. Its accessible name (the one thing that
    // showed the whole text) says a reply is being written, then is the text once finished.
    function test_streamingReplyIsNotReadWholePerToken() {
        tryVerify(() => testApp.model.ready, 60000)
        testApp.tabs.newConversation()
        tryVerify(() => testApp.tabs.current !== null && testApp.tabs.current !== test.session, 10000)
        const chat = testApp.tabs.current
        const list = createTemporaryObject(chatComponent, test, { chat: chat })
        verify(chat.send("Write a long story about a river, its boats and the mills along it."))
        tryVerify(() => list.count === 2 && list.itemAtIndex(1) !== null, 10000)
        const bubble = list.itemAtIndex(1)
        verify(bubble.streaming)
        let pieces = 0, names = 0
        const countPiece = () => ++pieces
        const countName = () => ++names
        chat.messages.textAppended.connect(countPiece)
        bubble.Accessible.nameChanged.connect(countName)
        tryVerify(() => pieces >= 30 || !chat.generating, 120000)
        const namesWhileStreaming = names
        chat.stop()
        tryVerify(() => !chat.generating, 30000)
        chat.messages.textAppended.disconnect(countPiece)
        bubble.Accessible.nameChanged.disconnect(countName)
        verify(pieces >= 10, "the model streamed only " + pieces + " pieces")
        compare(namesWhileStreaming, 0, "accessible name changes over " + pieces + " pieces")
        verify(bubble.model.text.length > 0)
        compare(bubble.Accessible.name, "Assistant: " + bubble.model.text)
    }
}
