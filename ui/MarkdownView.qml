import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import Arbor.Core

// A reply's markdown: prose as rich text, each fenced code block in a CodeBlock. The
// blocks come from a MarkdownBlockModel: as a reply streams, a token changes the last
// block's row or appends rows, so only the last block is rendered again and the items of
// finished blocks stay as they are. A MarkdownBlockList creates the items of the blocks
// in sight only, so a long reply costs what its visible part costs.
//
// The text comes either as `markdown` (the whole text) or as the message `messageId` of
// `messages`, whose streamed pieces the model takes from C++ as they come.
//
// A block measured above what is in sight moves what is in sight: shiftedInSight says by
// how much, for the scrolling view to keep it still. A block holding a selection keeps its
// item out of sight, so the selection is still there to copy.
Item {
    id: view
    signal shiftedInSight(real by)
    required property ArborApp app
    property alias markdown: blocks.markdown
    property alias messages: blocks.messages
    property alias messageId: blocks.messageId
    readonly property alias blocks: blocks
    readonly property int blockCount: blocks.count
    readonly property alias itemCount: list.itemCount
    // The block's item, null while it is out of sight.
    function blockItem(row) { return list.itemAt(row) }
    function blockTop(row) { return list.blockTop(row) }
    function blockHeight(row) { return list.blockHeight(row) }
    // The block at `y` (in this view), -1 when there are none.
    function blockAt(y) { return list.blockAt(y) }
    function forceLayout() { list.forceLayout() }

    implicitHeight: list.implicitHeight

    MarkdownBlockModel { id: blocks }
    FontMetrics {
        id: proseMetrics
        font.pixelSize: Theme.bodySize
    }
    FontMetrics {
        id: codeMetrics
        font.family: "monospace"
        font.pixelSize: Theme.codeSize
    }

    MarkdownBlockList {
        id: list
        width: view.width
        model: blocks
        spacing: 10  // between paragraphs, as a markdown document spaces them
        // A screen's worth above and below what is in sight: scrolling finds the next
        // blocks made already.
        cacheMargin: Math.max(400, (view.Window.window ? view.Window.window.height : 0))
        lineHeight: proseMetrics.lineSpacing
        charWidth: proseMetrics.averageCharacterWidth
        codeLineHeight: codeMetrics.lineSpacing
        codeCharWidth: codeMetrics.averageCharacterWidth
        codeChrome: 62  // CodeBlock: padding, the language and copy button row, margins
        onShiftedInSight: by => view.shiftedInSight(by)

        delegate: Loader {
            id: block
            objectName: "markdownBlock"
            required property string kind
            required property string text
            required property string language
            // The list keeps the item while the user has part of its text selected.
            readonly property bool keep: item !== null && item.selectedText.length > 0
            sourceComponent: kind === "code" ? codeComponent : textComponent

            Component {
                id: textComponent
                TextEdit {
                    id: prose
                    objectName: "markdownText"
                    text: block.text
                    textFormat: TextEdit.MarkdownText
                    readOnly: true
                    selectByMouse: true
                    wrapMode: TextEdit.Wrap
                    color: view.Material.foreground
                    font.pixelSize: Theme.bodySize
                    Accessible.name: block.text
                    onLinkActivated: link => Qt.openUrlExternally(link)
                    onTextChanged: links.apply()

                    LinkColour {
                        id: links
                        document: prose.textDocument
                        color: Theme.link(view.Material.theme === Material.Dark)
                    }
                }
            }
            Component {
                id: codeComponent
                CodeBlock {
                    app: view.app
                    code: block.text
                    language: block.language
                }
            }
        }
    }
}
