import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Dialogs
import QtQuick.Layouts
import Arbor.Core

// Settings page: the model file and how the engine runs it.
SettingsPage {
    id: page
    required property ArborApp app

    title: qsTr("Model")

    SettingsGrid {

        SettingLabel { text: qsTr("Model file") }
        RowLayout {
            Layout.fillWidth: true
            TextField {
                id: modelPath
                objectName: "modelPathField"
                Layout.fillWidth: true
                text: page.app.settings.modelPath
                selectByMouse: true
                Accessible.name: qsTr("Model file")
                onAccepted: page.app.chooseModel(text)
            }
            Button {
                text: qsTr("Choose…")
                Accessible.name: qsTr("Choose a GGUF model file")
                onClicked: fileDialog.open()
            }
        }
        Item { implicitWidth: 1 }
        Button {
            objectName: "openModelLibraryButton"
            text: qsTr("Model library and downloads…")
            Accessible.name: qsTr("Open the model library")
            onClicked: libraryDialog.open()
        }

        SettingLabel { text: qsTr("Threads") }
        SpinBox {
            from: 0
            to: page.app.settings.maxThreads
            value: page.app.settings.threads
            editable: true
            Accessible.name: qsTr("Threads")
            onValueModified: page.app.settings.threads = value
        }
        Item { implicitWidth: 1 }
        SettingHint { text: qsTr("0 uses one thread per core.") }

        SettingLabel { text: qsTr("KV cache memory (MiB)") }
        SpinBox {
            from: 32
            to: 65536
            stepSize: 64
            value: page.app.settings.kvMemoryMiB
            editable: true
            Accessible.name: qsTr("KV cache memory in MiB")
            onValueModified: page.app.settings.kvMemoryMiB = value
        }

        SettingLabel { text: qsTr("Context length (tokens)") }
        ContextLengthSetting {
            Layout.fillWidth: true
            app: page.app
        }
        Item { implicitWidth: 1 }
        SettingHint { text: qsTr("Kept for this model file; empty: what the model was trained with.") }

        Item { implicitWidth: 1 }
        Button {
            text: qsTr("Reload model with these settings")
            Accessible.name: qsTr("Reload model")
            onClicked: page.app.chooseModel(modelPath.text)
        }
    }

    ModelLibraryDialog {
        id: libraryDialog
        app: page.app
    }

    FileDialog {
        id: fileDialog
        title: qsTr("Choose a GGUF model")
        nameFilters: [qsTr("GGUF models (*.gguf)"), qsTr("All files (*)")]
        onAccepted: page.app.chooseModel(selectedFile.toString())
    }
}
