import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Arbor.Core

// Conversations, newest activity first, with search, new, rename and delete.
Pane {
    id: sidebar
    required property ArborApp app
    signal settingsRequested()
    readonly property alias renameDialog: renameDialog
    readonly property alias deleteDialog: deleteDialog

    padding: 8

    ColumnLayout {
        anchors.fill: parent
        spacing: 6

        RowLayout {
            Layout.fillWidth: true
            Button {
                objectName: "newConversationButton"
                Layout.fillWidth: true
                text: qsTr("New conversation")
                Accessible.name: qsTr("New conversation")
                onClicked: sidebar.app.tabs.newConversation()
                ToolTip.visible: hovered
                ToolTip.text: qsTr("Ctrl+N")
            }
            Button {
                objectName: "settingsButton"
                text: qsTr("Settings")
                flat: true
                Accessible.name: qsTr("Settings")
                onClicked: sidebar.settingsRequested()
            }
        }

        TextField {
            objectName: "searchField"
            Layout.fillWidth: true
            placeholderText: qsTr("Search conversations")
            Accessible.name: qsTr("Search conversations")
            selectByMouse: true
            onTextChanged: sidebar.app.conversations.filter = text
        }

        ListView {
            id: list
            objectName: "conversationList"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: sidebar.app.conversations
            Accessible.name: qsTr("Conversations")
            ScrollBar.vertical: ScrollBar {}

            delegate: ItemDelegate {
                id: row
                required property int index
                required property var model
                readonly property var conversationId: model.id
                readonly property string title: model.title

                width: ListView.view.width
                highlighted: sidebar.app.tabs.current !== null && sidebar.app.tabs.current.conversationId === row.conversationId
                text: row.title.length > 0 ? row.title : qsTr("New conversation")
                Accessible.name: text
                onClicked: sidebar.app.tabs.openConversation(row.conversationId)

                contentItem: RowLayout {
                    Label {
                        Layout.fillWidth: true
                        text: row.text
                        elide: Text.ElideRight
                    }
                    ToolButton {
                        text: "✎"
                        Accessible.name: qsTr("Rename %1").arg(row.text)
                        ToolTip.visible: hovered
                        ToolTip.text: qsTr("Rename")
                        onClicked: renameDialog.ask(row.conversationId, row.title)
                    }
                    ToolButton {
                        text: "✕"
                        Accessible.name: qsTr("Delete %1").arg(row.text)
                        ToolTip.visible: hovered
                        ToolTip.text: qsTr("Delete")
                        onClicked: deleteDialog.ask(row.conversationId, row.text)
                    }
                }
            }

            Label {
                anchors.centerIn: parent
                visible: list.count === 0
                text: sidebar.app.conversations.filter.length > 0 ? qsTr("No matches") : qsTr("No conversations yet")
                opacity: 0.6
            }
        }
    }

    Dialog {
        id: renameDialog
        objectName: "renameDialog"
        property var conversationId: 0
        function ask(id, title) {
            conversationId = id
            titleField.text = title
            open()
            titleField.forceActiveFocus()
            titleField.selectAll()
        }
        parent: Overlay.overlay
        anchors.centerIn: parent
        modal: true
        title: qsTr("Rename conversation")
        standardButtons: Dialog.Ok | Dialog.Cancel
        property alias titleText: titleField.text
        TextField {
            id: titleField
            width: 320
            Accessible.name: qsTr("Conversation title")
            onAccepted: renameDialog.accept()
        }
        onAccepted: sidebar.app.renameConversation(conversationId, titleField.text)
    }

    Dialog {
        id: deleteDialog
        objectName: "deleteDialog"
        property var conversationId: 0
        property string conversationTitle
        function ask(id, title) {
            conversationId = id
            conversationTitle = title
            open()
        }
        parent: Overlay.overlay
        anchors.centerIn: parent
        modal: true
        title: qsTr("Delete conversation?")
        standardButtons: Dialog.Yes | Dialog.No
        Label {
            width: 320
            text: qsTr("“%1” and all its messages will be deleted.").arg(deleteDialog.conversationTitle)
            wrapMode: Text.Wrap
        }
        onAccepted: sidebar.app.deleteConversation(conversationId)
    }
}
