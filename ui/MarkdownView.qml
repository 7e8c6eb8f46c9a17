import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Arbor.Core

// A reply's markdown: prose as rich text, each fenced code block in a CodeBlock.
ColumnLayout {
    id: view
    required property ArborApp app
    property string markdown

    spacing: 6

    Repeater {
        model: view.app.markdownBlocks(view.markdown)
        delegate: Loader {
            required property var modelData
            Layout.fillWidth: true
            sourceComponent: modelData.kind === "code" ? codeComponent : textComponent

            Component {
                id: textComponent
                TextEdit {
                    text: modelData.text
                    textFormat: TextEdit.MarkdownText
                    readOnly: true
                    selectByMouse: true
                    wrapMode: TextEdit.Wrap
                    color: palette.windowText
                    Accessible.name: modelData.text
                    onLinkActivated: link => Qt.openUrlExternally(link)
                }
            }
            Component {
                id: codeComponent
                CodeBlock {
                    app: view.app
                    code: modelData.text
                    language: modelData.language
                }
            }
        }
    }
}
