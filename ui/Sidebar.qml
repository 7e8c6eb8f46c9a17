import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// Conversations, newest activity first, with search, new, rename and delete.
Pane {
    id: sidebar
    required property ArborApp app
    signal settingsRequested()
    readonly property alias renameDialog: renameDialog

    function focusSearch() {
        search.forceActiveFocus()
        search.selectAll()
    }
    // Renames the current tab's conversation (F2).
    function renameCurrent() {
        const current = sidebar.app.tabs.current
        if (current) renameDialog.ask(current.conversationId, current.title)
    }

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
            id: search
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
                        objectName: "deleteConversationButton"
                        icon.source: "icons/trash.png"
                        icon.width: 18
                        icon.height: 18
                        Accessible.name: qsTr("Delete %1").arg(row.text)
                        ToolTip.visible: hovered
                        ToolTip.text: qsTr("Delete (can be undone for a few seconds)")
                        onClicked: sidebar.app.deleteWithUndo(row.conversationId, row.text)
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
        readonly property bool valid: titleField.text.trim().length > 0
        onValidChanged: standardButton(Dialog.Ok).enabled = valid
        Component.onCompleted: standardButton(Dialog.Ok).enabled = valid
        Column {
            spacing: 2
            TextField {
                id: titleField
                width: 320
                Accessible.name: qsTr("Conversation title")
                Accessible.description: renameProblem.text
                onAccepted: if (renameDialog.valid) renameDialog.accept()
            }
            Label {
                id: renameProblem
                objectName: "renameProblem"
                visible: !renameDialog.valid
                text: qsTr("A title cannot be empty")
                color: Theme.errorText(renameDialog.Material.theme === Material.Dark)
                font.pixelSize: 12
            }
        }
        onAccepted: sidebar.app.renameConversation(conversationId, titleField.text.trim())
    }
}
