import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Arbor.Core

// The messages of the current tab's conversation along the branch shown, and the
// composer. Shows a hint when no tab is open.
Item {
    id: view
    required property ArborApp app
    property ChatSession session: null

    ColumnLayout {
        anchors.fill: parent
        visible: view.session !== null
        spacing: 0

        RowLayout {
            Layout.fillWidth: true
            Layout.margins: 6
            Label {
                Layout.fillWidth: true
                text: view.session ? view.session.error : ""
                visible: text.length > 0
                color: "#c62828"
                wrapMode: Text.Wrap
                Accessible.role: Accessible.AlertMessage
                Accessible.name: text
            }
            Item { Layout.fillWidth: true }
            Button {
                objectName: "conversationSettingsButton"
                text: qsTr("Conversation settings")
                flat: true
                Accessible.name: qsTr("Conversation settings")
                onClicked: conversationSettings.open()
            }
        }

        ListView {
            id: messageList
            objectName: "messageList"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            spacing: 10
            leftMargin: 16
            rightMargin: 16
            bottomMargin: 12
            model: view.session ? view.session.messages : null
            Accessible.name: qsTr("Messages")
            ScrollBar.vertical: ScrollBar {}
            // Stay at the bottom while a reply streams in, unless the user scrolled up.
            property bool followEnd: true
            onMovementEnded: followEnd = atYEnd
            onContentHeightChanged: if (followEnd) positionViewAtEnd()
            onCountChanged: if (followEnd) positionViewAtEnd()

            delegate: MessageBubble {
                width: messageList.width - messageList.leftMargin - messageList.rightMargin
                app: view.app
                session: view.session
            }
        }

        Composer {
            id: composer
            objectName: "composer"
            Layout.fillWidth: true
            Layout.margins: 10
            generating: view.session !== null && view.session.generating
            ready: view.app.model.ready
            onSendRequested: text => {
                if (view.session && view.session.send(text)) {
                    composer.clear()
                    messageList.followEnd = true
                }
            }
            onStopRequested: if (view.session) view.session.stop()
        }
    }

    Label {
        anchors.centerIn: parent
        visible: view.session === null
        horizontalAlignment: Text.AlignHCenter
        text: qsTr("Start a new conversation with Ctrl+N,\nor open one from the list.")
        opacity: 0.6
    }

    onSessionChanged: {
        messageList.followEnd = true
        if (session) composer.focusInput()
    }

    ConversationSettingsDialog {
        id: conversationSettings
        session: view.session
        parent: Overlay.overlay
        anchors.centerIn: parent
    }
}
