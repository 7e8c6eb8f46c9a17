import QtQuick
import QtQuick.Controls
import QtQuick.Dialogs
import QtQuick.Layouts
import Arbor.Core

// App-wide settings: the model file, threads, KV memory, the default system prompt and
// its presets, theme, the local API, and KV storage.
Dialog {
    id: dialog
    required property ArborApp app

    title: qsTr("Settings")
    modal: true
    standardButtons: Dialog.Close
    width: Math.min(620, parent ? parent.width - 40 : 620)
    height: Math.min(640, parent ? parent.height - 40 : 640)
    parent: Overlay.overlay

    ScrollView {
        anchors.fill: parent
        contentWidth: availableWidth

        ColumnLayout {
            width: parent.width
            spacing: 10

            Label { text: qsTr("Model"); font.bold: true }
            RowLayout {
                Layout.fillWidth: true
                TextField {
                    id: modelPath
                    objectName: "modelPathField"
                    Layout.fillWidth: true
                    text: dialog.app.settings.modelPath
                    selectByMouse: true
                    Accessible.name: qsTr("Model file")
                    onAccepted: dialog.app.chooseModel(text)
                }
                Button {
                    text: qsTr("Choose…")
                    Accessible.name: qsTr("Choose a GGUF model file")
                    onClicked: fileDialog.open()
                }
            }
            GridLayout {
                columns: 2
                Label { text: qsTr("Threads (0: one per core)") }
                SpinBox {
                    id: threads
                    from: 0
                    to: dialog.app.settings.maxThreads
                    value: dialog.app.settings.threads
                    editable: true
                    Accessible.name: qsTr("Threads")
                    onValueModified: dialog.app.settings.threads = value
                }
                Label { text: qsTr("KV cache memory (MiB)") }
                SpinBox {
                    id: kvMemory
                    from: 32
                    to: 65536
                    stepSize: 64
                    value: dialog.app.settings.kvMemoryMiB
                    editable: true
                    Accessible.name: qsTr("KV cache memory in MiB")
                    onValueModified: dialog.app.settings.kvMemoryMiB = value
                }
            }
            Button {
                text: qsTr("Reload model with these settings")
                Accessible.name: qsTr("Reload model")
                onClicked: dialog.app.chooseModel(modelPath.text)
            }

            Label { text: qsTr("Chat"); font.bold: true }
            SystemPromptSettings {
                Layout.fillWidth: true
                settings: dialog.app.settings
            }

            Label { text: qsTr("Appearance"); font.bold: true }
            RowLayout {
                Label { text: qsTr("Theme") }
                ComboBox {
                    id: theme
                    objectName: "themeBox"
                    model: [qsTr("Follow system"), qsTr("Light"), qsTr("Dark")]
                    readonly property var values: ["system", "light", "dark"]
                    currentIndex: Math.max(0, values.indexOf(dialog.app.settings.theme))
                    Accessible.name: qsTr("Theme")
                    onActivated: index => dialog.app.settings.theme = values[index]
                }
            }

            Label { text: qsTr("Local API"); font.bold: true }
            ApiSettings {
                Layout.fillWidth: true
                api: dialog.app.api
            }

            Label { text: qsTr("Storage"); font.bold: true }
            KvStorageSettings {
                Layout.fillWidth: true
                settings: dialog.app.settings
            }
            Label {
                text: qsTr("Database: %1").arg(dialog.app.databasePath)
                opacity: 0.6
                font.pixelSize: 11
                wrapMode: Text.WrapAnywhere
                Layout.fillWidth: true
            }
        }
    }

    FileDialog {
        id: fileDialog
        title: qsTr("Choose a GGUF model")
        nameFilters: [qsTr("GGUF models (*.gguf)"), qsTr("All files (*)")]
        onAccepted: dialog.app.chooseModel(selectedFile.toString())
    }
}
