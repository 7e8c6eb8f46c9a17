import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// A fenced code block: monospace with syntax colours for its language, and a copy button.
Rectangle {
    id: block
    required property ArborApp app
    property string code
    property string language
    readonly property bool highlighted: highlighter.active  // a language it colours
    // What codeText holds: a streaming block grows at its end, and only the new end is
    // inserted (laid out and coloured), not the whole block again.
    property string shownCode
    readonly property alias selectedText: codeText.selectedText

    function showCode() {
        if (code.length > shownCode.length && shownCode.length > 0 && code.startsWith(shownCode))
            codeText.insert(codeText.length, code.slice(shownCode.length))
        else
            codeText.text = code
        shownCode = code
    }
    onCodeChanged: showCode()
    Component.onCompleted: showCode()

    objectName: "codeBlock"

    implicitHeight: column.implicitHeight + 12
    radius: 6
    readonly property bool dark: Material.theme === Material.Dark
    color: Theme.codeBackground(dark)
    border.color: Theme.outline(dark)

    ColumnLayout {
        id: column
        anchors.fill: parent
        anchors.margins: 6
        spacing: 2
        RowLayout {
            Layout.fillWidth: true
            Label {
                Layout.fillWidth: true
                text: block.language
                color: Theme.secondaryText(block.dark)
                font.pixelSize: Theme.captionSize
            }
            IconButton {
                objectName: "copyCodeButton"
                text: qsTr("Copy code")
                iconName: "copy"
                icon.width: 16
                icon.height: 16
                onClicked: block.app.copyText(block.code)
            }
        }
        TextEdit {
            id: codeText
            objectName: "codeText"
            Layout.fillWidth: true
            font.family: "monospace"
            font.pixelSize: Theme.codeSize
            readOnly: true
            selectByMouse: true
            wrapMode: TextEdit.WrapAnywhere
            color: block.Material.foreground
            textFormat: TextEdit.PlainText
            Accessible.name: qsTr("Code: %1").arg(block.code)
        }
    }

    CodeHighlighter {
        id: highlighter
        document: codeText.textDocument
        language: block.language
        dark: block.dark
    }
}
