import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// App-wide settings, one page at a time: Model, Chat, Appearance, Local API, Storage,
// chosen from the list at the left.
Dialog {
    id: dialog
    objectName: "settingsDialog"
    required property ArborApp app
    property alias currentPage: pageList.currentIndex

    title: qsTr("Settings")
    modal: true
    standardButtons: Dialog.Close
    width: Math.min(820, parent ? parent.width - 40 : 820)
    height: Math.min(620, parent ? parent.height - 40 : 620)
    parent: Overlay.overlay
    topPadding: 8
    // Material draws a popup's shadow with a shader effect, which the software renderer
    // cannot run: there, it would leave the dialog without its background.
    Material.elevation: contentItem.GraphicsInfo.api === GraphicsInfo.Software ? 0 : 24

    RowLayout {
        anchors.fill: parent
        spacing: 12

        ListView {
            id: pageList
            objectName: "settingsPageList"
            Layout.preferredWidth: dialog.width < 700 ? 140 : 160
            Layout.fillHeight: true
            clip: true
            currentIndex: 0
            model: [qsTr("Model"), qsTr("Chat"), qsTr("Appearance"), qsTr("Local API"), qsTr("Storage")]
            Accessible.name: qsTr("Settings pages")
            delegate: ItemDelegate {
                required property int index
                required property string modelData
                objectName: "settingsPageButton"
                width: ListView.view.width
                text: modelData
                highlighted: ListView.isCurrentItem
                Accessible.name: qsTr("%1 settings").arg(modelData)
                onClicked: pageList.currentIndex = index
            }
        }

        ToolSeparator {
            orientation: Qt.Vertical
            Layout.fillHeight: true
            padding: 0
        }

        StackLayout {
            objectName: "settingsPages"
            Layout.fillWidth: true
            Layout.fillHeight: true
            currentIndex: pageList.currentIndex

            ModelSettingsPage { objectName: "modelSettingsPage"; app: dialog.app }
            ChatSettingsPage { objectName: "chatSettingsPage"; app: dialog.app }
            AppearanceSettingsPage { objectName: "appearanceSettingsPage"; app: dialog.app }
            LocalApiSettingsPage { objectName: "localApiSettingsPage"; app: dialog.app }
            StorageSettingsPage { objectName: "storageSettingsPage"; app: dialog.app }
        }
    }
}
