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
    // A conversation was opened or started from the sidebar (a floating sidebar closes).
    signal conversationChosen()
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
            spacing: 0
            Label {
                Layout.fillWidth: true
                Layout.leftMargin: 8
                text: qsTr("Conversations")
                font.pixelSize: Theme.titleSize
                font.bold: true
                elide: Text.ElideRight
            }
            IconButton {
                objectName: "newConversationButton"
                text: qsTr("New conversation (Ctrl+N)")
                iconName: "plus"
                onClicked: {
                    sidebar.app.tabs.newConversation()
                    sidebar.conversationChosen()
                }
            }
            IconButton {
                objectName: "settingsButton"
                text: qsTr("Settings (Ctrl+,)")
                iconName: "settings"
                onClicked: sidebar.settingsRequested()
            }
        }

        TextField {
            id: search
            objectName: "searchField"
            Layout.fillWidth: true
            placeholderText: qsTr("Search conversations")
            placeholderTextColor: Theme.secondaryText(sidebar.Material.theme === Material.Dark)
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
                onClicked: {
                    sidebar.app.tabs.openConversation(row.conversationId)
                    sidebar.conversationChosen()
                }
                leftPadding: 12
                rightPadding: 4
                topPadding: 2
                bottomPadding: 2
                ToolTip.visible: hovered && title.truncated
                ToolTip.delay: 700
                ToolTip.text: row.text

                contentItem: RowLayout {
                    spacing: 0
                    Label {
                        id: title
                        objectName: "conversationTitle"
                        Layout.fillWidth: true
                        text: row.text
                        elide: Text.ElideRight
                    }
                    IconButton {
                        objectName: "renameConversationButton"
                        text: qsTr("Rename")
                        iconName: "pencil"
                        icon.width: 18
                        icon.height: 18
                        implicitWidth: 34
                        Accessible.name: qsTr("Rename %1").arg(row.text)
                        onClicked: renameDialog.ask(row.conversationId, row.title)
                    }
                    IconButton {
                        objectName: "deleteConversationButton"
                        text: qsTr("Delete (can be undone for a few seconds)")
                        iconName: "trash"
                        icon.width: 18
                        icon.height: 18
                        implicitWidth: 34
                        Accessible.name: qsTr("Delete %1").arg(row.text)
                        onClicked: sidebar.app.deleteWithUndo(row.conversationId, row.text)
                    }
                }
            }

            Label {
                anchors.centerIn: parent
                visible: list.count === 0
                text: sidebar.app.conversations.filter.length > 0 ? qsTr("No matches") : qsTr("No conversations yet")
                color: Theme.secondaryText(sidebar.Material.theme === Material.Dark)
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
        // No shadow under the software renderer (see SettingsDialog).
        Material.elevation: contentItem.GraphicsInfo.api === GraphicsInfo.Software ? 0 : 24
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
                font.pixelSize: Theme.captionSize
            }
        }
        onAccepted: sidebar.app.renameConversation(conversationId, titleField.text.trim())
    }
}
