import QtQuick
import QtTest
import Arbor.Ui

TestCase {
    id: test
    name: "MarkdownView"
    when: windowShown
    visible: true  // TestCase hides itself by default; hidden items get no clicks
    width: 600
    height: 400

    Component {
        id: viewComponent
        MarkdownView { width: 500; app: testApp }
    }

    // A view in a clipping flickable, as the chat's list holds a reply.
    Component {
        id: scrolledComponent
        Flickable {
            property alias view: markdownView
            width: 500
            height: 300
            clip: true
            contentHeight: markdownView.height
            MarkdownView { id: markdownView; width: 480; app: testApp }
        }
    }

    function collect(item, name, out) {
        if (item.objectName === name) out.push(item)
        for (let i = 0; i < item.children.length; ++i) collect(item.children[i], name, out)
        return out
    }

    function test_codeBlocksGetMonospaceAndCopy() {
        const view = createTemporaryObject(viewComponent, test, {
            markdown: "Use this:\n\n```python\nprint('a')\nprint('b')\n```\n\nand **then**\n\n```\nls -l\n```" })
        waitForRendering(view)
        const codes = collect(view, "codeText", [])
        compare(codes.length, 2)
        compare(codes[0].text, "print('a')\nprint('b')")
        compare(codes[1].text, "ls -l")
        verify(codes[0].font.family.toLowerCase().indexOf("mono") >= 0)
        const copies = collect(view, "copyCodeButton", [])
        compare(copies.length, 2)
        compare(copies[0].Accessible.name, "Copy code")
        mouseClick(copies[0])  // must not throw
    }

    // Known fence languages get syntax colours; an unknown or missing one stays plain.
    function test_codeBlocksInAKnownLanguageAreHighlighted() {
        const view = createTemporaryObject(viewComponent, test, {
            markdown: "```python\ndef f(): return 1\n```\n\n```klingon\nQapla'\n```\n\n```\nls -l\n```" })
        waitForRendering(view)
        const blocks = collect(view, "codeBlock", [])
        compare(blocks.length, 3)
        compare(blocks[0].language, "python")
        verify(blocks[0].highlighted)
        verify(!blocks[1].highlighted)
        verify(!blocks[2].highlighted)
    }

    function test_streamingFenceIsCode() {
        const view = createTemporaryObject(viewComponent, test, { markdown: "Here:\n```js\nlet x = 1" })
        waitForRendering(view)
        const codes = collect(view, "codeText", [])
        compare(codes.length, 1)
        compare(codes[0].text, "let x = 1")
        view.markdown = "Here:\n```js\nlet x = 1\n```\nDone."
        waitForRendering(view)
        compare(collect(view, "codeText", []).length, 1)
    }

    // A streaming reply: finished blocks keep their items (a selection in them survives
    // new tokens) and the growing code block is extended, not set again (its selection
    // survives too).
    function test_streamingKeepsFinishedBlocks() {
        const view = createTemporaryObject(viewComponent, test, {
            markdown: "First paragraph.\n\nSecond paragraph.\n\n```python\nx = 1" })
        waitForRendering(view)
        const prose = collect(view, "markdownText", [])
        compare(prose.length, 2)
        const code = collect(view, "codeText", [])
        compare(code.length, 1)
        prose[0].select(0, 5)
        code[0].select(0, 1)

        for (const piece of ["\ny", " = 2", "\n```", "\n\nThird", " paragraph."])
            view.markdown += piece
        waitForRendering(view)
        const proseAfter = collect(view, "markdownText", [])
        compare(proseAfter.length, 3)
        verify(proseAfter[0] === prose[0])
        verify(proseAfter[1] === prose[1])
        compare(proseAfter[0].selectedText, "First")
        const codeAfter = collect(view, "codeText", [])
        compare(codeAfter.length, 1)
        verify(codeAfter[0] === code[0])
        compare(codeAfter[0].text, "x = 1\ny = 2")
        compare(codeAfter[0].selectedText, "x")
        compare(view.blockCount, 4)
    }

    // A reply streamed one character at a time (so fences arrive as "``" and "`", a list
    // item's number before its "."): no block goes, and after each character every block
    // but the last two (the ones still open) keeps its item and what the item shows.
    function test_streamingNeverRebuildsClosedBlocks() {
        const reply = "# Title\n\nIntro paragraph.\n\n1. one\n2. two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
                    + "```python\nx = 1\ny = 2\n```\n\n~~~\nplain\n~~~\n\nThe end."
        const view = createTemporaryObject(viewComponent, test)
        let before = []
        for (let at = 1; at <= reply.length; ++at) {
            view.markdown = reply.slice(0, at)
            view.forceLayout()
            verify(view.blockCount >= before.length, "no block goes at " + at)
            const blocks = collect(view, "markdownBlock", [])
            for (let i = 0; i < before.length - 2; ++i) {
                verify(blocks[i] === before[i].block, "block " + i + " kept at " + at)
                verify(blocks[i].item === before[i].item, "item of block " + i + " kept at " + at)
            }
            before = blocks.map(b => ({ block: b, item: b.item }))
        }
        waitForRendering(view)
        compare(view.blockCount, 6)
        const codes = collect(view, "codeText", [])
        compare(codes.length, 2)
        compare(codes[0].text, "x = 1\ny = 2")
        compare(codes[1].text, "plain")
        const prose = collect(view, "markdownText", [])
        compare(prose.length, 4)
        compare(prose[1].Accessible.name, "Intro paragraph.\n\n1. one\n2. two")
        compare(prose[2].Accessible.name, "| a | b |\n|---|---|\n| 1 | 2 |")
    }

    // A 20,000-word reply: only the blocks in sight and a margin around them have items,
    // wherever the view is scrolled, and scrolling to the end shows the last block.
    function test_longReplyMakesItemsOnlyForWhatIsInSight() {
        let text = ""
        let words = 0
        for (let i = 0; words < 20000; ++i) {
            if (i % 10 === 9) {
                text += "```python\nx = " + i + "\nprint(x)\n```\n\n"
                words += 4
            } else {
                text += "Paragraph " + i + " says " + "something worth reading, ".repeat(12) + "and so on.\n\n"
                words += 41
            }
        }
        text += "The very last paragraph."
        const flick = createTemporaryObject(scrolledComponent, test)
        const view = flick.view
        view.markdown = text
        waitForRendering(flick)
        verify(view.blockCount > 450, "blocks: " + view.blockCount)
        const limit = 40
        verify(view.itemCount > 0)
        verify(view.itemCount <= limit, "items at the top: " + view.itemCount)
        verify(collect(view, "markdownBlock", []).length <= limit)
        const first = view.blockItem(0).item
        compare(first.getText(0, first.length), "Paragraph 0 says " + "something worth reading, ".repeat(12) + "and so on.")

        const last = view.blockCount - 1
        tryVerify(() => {
            flick.contentY = Math.max(0, flick.contentHeight - flick.height)
            const item = view.blockItem(last)
            if (!item || !item.item || item.item.getText(0, item.item.length) !== "The very last paragraph.") return false
            const where = item.mapToItem(flick, 0, 0)
            return where.y >= 0 && where.y + item.height <= flick.height + 1
        }, 5000, "the last block in sight at the end")
        compare(view.blockTop(last) + view.blockItem(last).height, view.height)
        verify(view.itemCount <= limit, "items at the end: " + view.itemCount)
        verify(view.blockItem(0) === null, "the first block's item goes out of sight")

        flick.contentY = flick.contentHeight / 2
        waitForRendering(flick)
        verify(view.itemCount > 0 && view.itemCount <= limit, "items in the middle: " + view.itemCount)
        const texts = collect(view, "markdownText", []).concat(collect(view, "codeText", []))
        verify(texts.some(t => { const p = t.mapToItem(flick, 0, 0); return p.y < flick.height && p.y + t.height > 0 }),
               "something in sight in the middle")
    }

    // A code block holding a selection keeps its item far out of sight, and lets it go
    // once the selection is gone.
    function test_selectedCodeBlockStaysOutOfSight() {
        const flick = createTemporaryObject(scrolledComponent, test)
        const view = flick.view
        view.markdown = "```python\nselected = 1\n```\n\n" + "A paragraph of words to scroll past.\n\n".repeat(400)
        waitForRendering(flick)
        const code = collect(view, "codeText", [])
        compare(code.length, 1)
        code[0].select(0, 8)
        const block = view.blockItem(0)
        flick.contentY = flick.contentHeight - flick.height
        waitForRendering(flick)
        view.forceLayout()
        verify(view.blockItem(0) === block, "the selected block's item is kept")
        compare(code[0].selectedText, "selected")
        code[0].deselect()
        view.forceLayout()
        compare(view.blockItem(0), null)
    }

    function test_proseOnly() {
        const view = createTemporaryObject(viewComponent, test, { markdown: "Just **words**." })
        waitForRendering(view)
        compare(collect(view, "codeText", []).length, 0)
        verify(view.implicitHeight > 0)
    }
}
