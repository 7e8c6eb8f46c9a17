import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Arbor.Core

// One message: the text (a reply as markdown with code blocks), branch navigation when
// it has siblings, copy / edit / regenerate, and under a reply its stats.
Item {
    id: bubble
    required property int index
    required property var model
    required property ArborApp app
    required property ChatSession session

    readonly property bool isUser: model.role === "user"
    readonly property bool isReply: model.role === "assistant"
    readonly property bool streaming: model.state === "streaming"
    property bool editing: false

    implicitHeight: card.implicitHeight
    Accessible.role: Accessible.ListItem
    Accessible.name: (isUser ? qsTr("You") : qsTr("Assistant")) + ": " + model.text

    function statsText(s) {
        if (!s) return ""
        let parts = []
        if (s.tokensPerSecond !== undefined) parts.push(qsTr("%1 tokens/s").arg(s.tokensPerSecond.toFixed(1)))
        if (s.ttftMs !== undefined) parts.push(qsTr("first token %1 ms").arg(Math.round(s.ttftMs)))
        if (s.promptTokens !== undefined)
            parts.push(qsTr("%1 prompt tokens, %2 from cache").arg(s.promptTokens).arg(s.cachedTokens !== undefined ? s.cachedTokens : 0))
        if (s.finishReason !== undefined && s.finishReason !== "stop") parts.push(s.finishReason)
        return parts.join("  ·  ")
    }

    Pane {
        id: card
        width: bubble.isUser ? Math.min(bubble.width * 0.8, Math.max(implicitWidth, 240)) : bubble.width
        anchors.right: bubble.isUser ? bubble.right : undefined
        padding: 10
        background: Rectangle {
            radius: 8
            color: bubble.isUser ? Qt.alpha(palette.highlight, 0.15) : "transparent"
            border.color: bubble.isUser ? "transparent" : Qt.alpha(palette.windowText, 0.12)
        }

        ColumnLayout {
            width: parent.width
            spacing: 6

            Label {
                text: bubble.isUser ? qsTr("You") : bubble.isReply ? qsTr("Assistant") : qsTr("System")
                font.bold: true
                opacity: 0.7
            }

            // The text: plain for the user's messages, markdown for replies.
            TextEdit {
                objectName: "userText"
                visible: !bubble.isReply && !bubble.editing
                Layout.fillWidth: true
                text: bubble.model.text
                readOnly: true
                selectByMouse: true
                wrapMode: TextEdit.Wrap
                color: palette.windowText
                textFormat: TextEdit.PlainText
                Accessible.name: text
            }
            MarkdownView {
                visible: bubble.isReply
                Layout.fillWidth: true
                app: bubble.app
                markdown: bubble.model.text
            }
            BusyIndicator {
                visible: bubble.streaming && bubble.model.text.length === 0
                running: visible
                Layout.preferredHeight: 28
                Layout.preferredWidth: 28
                Accessible.name: qsTr("Waiting for the reply")
            }

            // Editing a message of the user: a new sibling version, then its reply.
            ColumnLayout {
                visible: bubble.editing
                Layout.fillWidth: true
                TextArea {
                    id: editor
                    objectName: "editField"
                    Layout.fillWidth: true
                    wrapMode: TextEdit.Wrap
                    Accessible.name: qsTr("Edit message")
                }
                RowLayout {
                    Button {
                        text: qsTr("Save and send")
                        highlighted: true
                        enabled: !bubble.session.generating && editor.text.trim().length > 0
                        onClicked: if (bubble.session.edit(bubble.index, editor.text)) bubble.editing = false
                    }
                    Button {
                        text: qsTr("Cancel")
                        flat: true
                        onClicked: bubble.editing = false
                    }
                }
            }

            RowLayout {
                spacing: 2
                visible: !bubble.editing

                // "< 2/3 >" between the message's siblings
                RowLayout {
                    visible: bubble.model.branchCount > 1
                    spacing: 0
                    ToolButton {
                        text: "‹"
                        enabled: bubble.model.branchIndex > 0
                        Accessible.name: qsTr("Previous version")
                        onClicked: bubble.session.messages.previousBranch(bubble.index)
                    }
                    Label {
                        objectName: "branchLabel"
                        text: (bubble.model.branchIndex + 1) + "/" + bubble.model.branchCount
                        Accessible.name: qsTr("Version %1 of %2").arg(bubble.model.branchIndex + 1).arg(bubble.model.branchCount)
                    }
                    ToolButton {
                        text: "›"
                        enabled: bubble.model.branchIndex + 1 < bubble.model.branchCount
                        Accessible.name: qsTr("Next version")
                        onClicked: bubble.session.messages.nextBranch(bubble.index)
                    }
                }
                ToolButton {
                    text: qsTr("Copy")
                    font.pixelSize: 12
                    Accessible.name: qsTr("Copy message")
                    onClicked: bubble.app.copyText(bubble.model.text)
                }
                ToolButton {
                    visible: bubble.isUser
                    text: qsTr("Edit")
                    font.pixelSize: 12
                    enabled: !bubble.session.generating
                    Accessible.name: qsTr("Edit message")
                    onClicked: {
                        editor.text = bubble.model.text
                        bubble.editing = true
                        editor.forceActiveFocus()
                    }
                }
                ToolButton {
                    visible: bubble.isReply && !bubble.streaming
                    text: qsTr("Regenerate")
                    font.pixelSize: 12
                    enabled: !bubble.session.generating && bubble.app.model.ready
                    Accessible.name: qsTr("Regenerate reply")
                    onClicked: bubble.session.regenerate(bubble.index)
                }
                Label {
                    objectName: "statsLabel"
                    visible: bubble.isReply && text.length > 0
                    Layout.leftMargin: 8
                    text: bubble.streaming ? qsTr("generating…") : bubble.statsText(bubble.model.stats)
                    opacity: 0.6
                    font.pixelSize: 12
                    Accessible.name: qsTr("Reply statistics: %1").arg(text)
                }
            }
        }
    }
}
