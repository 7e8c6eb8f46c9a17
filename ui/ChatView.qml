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
    // The session whose messages and draft the view holds: it follows `session` only after
    // the view saved the state of the one it leaves (onSessionChanged below).
    property ChatSession shown: null
    // Each tab's unsent text and scroll position while another tab is shown, by
    // conversation id (view state: not stored).
    property var hiddenTabs: ({})

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
            model: view.shown ? view.shown.messages : null
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
                session: view.shown
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
        if (shown) {
            // Scroll position as the message at the top and how far into it the view is.
            const top = messageList.indexAt(1, messageList.contentY + 1)
            const item = top >= 0 ? messageList.itemAtIndex(top) : null
            hiddenTabs[shown.conversationId] = {
                draft: composer.text,
                followEnd: messageList.followEnd || top < 0,
                top: top,
                offset: item ? messageList.contentY - item.y : 0
            }
        }
        shown = session
        const saved = session ? hiddenTabs[session.conversationId] : undefined
        if (saved) delete hiddenTabs[session.conversationId]
        composer.text = saved ? saved.draft : ""
        messageList.followEnd = saved ? saved.followEnd : true
        messageList.forceLayout()
        if (messageList.followEnd) {
            messageList.positionViewAtEnd()
        } else {
            messageList.positionViewAtIndex(saved.top, ListView.Beginning)
            messageList.contentY += saved.offset
        }
        if (session) composer.focusInput()
    }

    ConversationSettingsDialog {
        id: conversationSettings
        session: view.session
        parent: Overlay.overlay
        anchors.centerIn: parent
    }
}
