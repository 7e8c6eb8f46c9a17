import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// A reply's markdown: prose as rich text, each fenced code block in a CodeBlock. The
// blocks come from a MarkdownBlockModel: as a reply streams, a token changes the last
// block's row or appends rows, so only the last block is rendered again and the items of
// finished blocks stay as they are.
ColumnLayout {
    id: view
    required property ArborApp app
    property string markdown
    readonly property int blockCount: blocks.count

    spacing: 10  // between paragraphs, as a markdown document spaces them

    Repeater {
        model: MarkdownBlockModel {
            id: blocks
            markdown: view.markdown
        }
        delegate: Loader {
            id: block
            objectName: "markdownBlock"
            required property string kind
            required property string text
            required property string language
            Layout.fillWidth: true
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
