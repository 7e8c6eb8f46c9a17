import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Dialogs
import QtQuick.Layouts
import Arbor.Core

// The model library: every GGUF file in the models folder and the folders added here,
// with what its header says and whether it fits in memory; use, show or delete one
// (deleting can be undone for a few seconds). Downloads are below (ModelDownloadPanel).
SettingsPage {
    id: page
    required property ArborApp app
    readonly property bool dark: Material.theme === Material.Dark

    title: qsTr("Model library")

    Label {
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        text: qsTr("Folders: %1").arg([page.app.library.defaultFolder].concat(page.app.library.folders).join(", "))
    }
    RowLayout {
        Button {
            objectName: "addModelFolderButton"
            text: qsTr("Add folder…")
            Accessible.name: qsTr("Add a folder of models")
            onClicked: folderDialog.open()
        }
        Repeater {
            model: page.app.library.folders
            delegate: Button {
                required property string modelData
                flat: true
                text: qsTr("Remove %1").arg(modelData)
                Accessible.name: text
                onClicked: page.app.settings.removeModelFolder(modelData)
            }
        }
    }
    SettingHint {
        id: folderProblem
        objectName: "modelFolderProblem"
        visible: text.length > 0
        color: Theme.errorText(page.dark)
    }

    Label {
        visible: page.app.library.count === 0
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        text: qsTr("No models yet: download one below, or add a folder that holds .gguf files.")
    }

    Repeater {
        objectName: "libraryList"
        model: page.app.library
        delegate: Pane {
            id: row
            required property string path
            required property string fileName
            required property string name
            required property string architecture
            required property string parameters
            required property string quantType
            required property string sizeText
            required property var contextLength
            required property bool supported
            required property string problem
            required property string fitVerdict
            required property string fitText
            objectName: "libraryRow"
            Layout.fillWidth: true
            padding: 10
            Material.elevation: 0
            background: Rectangle {
                color: "transparent"
                border.color: Theme.outline(page.dark)
                radius: 6
            }

            ColumnLayout {
                anchors.left: parent.left
                anchors.right: parent.right
                spacing: 4
                Label {
                    text: row.name + (row.path === page.app.settings.modelPath ? qsTr("  (in use)") : "")
                    font.bold: true
                    Layout.fillWidth: true
                    elide: Text.ElideRight
                }
                SettingHint { text: row.fileName }
                Label {
                    objectName: "libraryDetails"
                    Layout.fillWidth: true
                    wrapMode: Text.Wrap
                    text: [row.architecture, row.parameters, row.quantType, row.sizeText,
                           row.contextLength > 0 ? qsTr("%1 tokens").arg(row.contextLength) : ""]
                          .filter(s => s.length > 0).join(" · ")
                }
                Label {
                    objectName: "libraryFit"
                    Layout.fillWidth: true
                    wrapMode: Text.Wrap
                    text: row.supported ? row.fitText : qsTr("Not supported: %1").arg(row.problem)
                    color: !row.supported || row.fitVerdict === "will not fit" ? Theme.errorText(page.dark)
                                                                              : Theme.secondaryText(page.dark)
                }
                RowLayout {
                    Button {
                        objectName: "useModelButton"
                        text: qsTr("Use")
                        enabled: row.supported && row.path !== page.app.settings.modelPath
                        Accessible.name: qsTr("Use %1").arg(row.name)
                        onClicked: page.app.chooseModel(row.path)
                    }
                    Button {
                        flat: true
                        text: qsTr("Show in folder")
                        Accessible.name: qsTr("Show %1 in the file manager").arg(row.fileName)
                        onClicked: page.app.library.revealInFileManager(row.path)
                    }
                    Button {
                        objectName: "deleteModelButton"
                        flat: true
                        text: qsTr("Delete")
                        Accessible.name: qsTr("Delete %1").arg(row.fileName)
                        onClicked: page.app.library.deleteWithUndo(row.path)
                    }
                }
            }
        }
    }

    UndoBar {
        Layout.fillWidth: true
        title: page.app.library.pendingDeletion
        onUndo: page.app.library.undoDelete()
    }

    ModelDownloadPanel {
        Layout.fillWidth: true
        downloads: page.app.downloads
    }

    FolderDialog {
        id: folderDialog
        title: qsTr("Add a folder of GGUF models")
        onAccepted: folderProblem.text = page.app.settings.addModelFolder(selectedFolder.toString())
    }
}
