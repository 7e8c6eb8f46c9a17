import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Dialogs
import QtQuick.Layouts
import Arbor.Core

// Settings page: the model file and how the engine runs it, and the remote servers.
SettingsPage {
    id: page
    required property ArborApp app

    title: qsTr("Model")

    // The free memory shown is of the moment the page is shown.
    onVisibleChanged: if (visible) devices.refresh()

    DeviceList {
        id: devices
        selected: page.app.settings.device
    }
    DeviceStatus {
        id: deviceStatus
        model: page.app.model
    }

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

        SettingLabel { text: qsTr("Device") }
        SettingComboBox {
            id: deviceBox
            objectName: "deviceBox"
            Layout.fillWidth: true
            model: devices.choices
            textRole: "label"
            valueRole: "value"
            currentIndex: devices.selectedIndex
            Accessible.name: qsTr("Device that runs the model")
            onActivated: index => deviceProblem.text = page.app.settings.setDevice(devices.choices[index].value)
        }
        Item { implicitWidth: 1 }
        SettingHint {
            objectName: "deviceHint"
            text: devices.searching ? qsTr("Looking for GPUs…")
                  : devices.gpuCount === 0 ? qsTr("No GPU: %1. The model runs on the CPU.").arg(devices.noneReason)
                  : qsTr("Takes effect when the model is reloaded.")
        }
        Item { implicitWidth: 1; visible: deviceProblem.text.length > 0 }
        SettingHint {
            id: deviceProblem
            objectName: "deviceProblem"
            visible: text.length > 0
            color: Theme.errorText(Material.theme === Material.Dark)
        }
        Item { implicitWidth: 1; visible: deviceInUse.visible }
        SettingHint {
            id: deviceInUse
            objectName: "deviceInUse"
            visible: page.app.model.ready
            // The reason once: not again when the line above says it.
            text: deviceStatus.fallback.length > 0 && deviceStatus.fallback !== devices.noneReason
                  ? qsTr("In use: %1 (the GPU is not used: %2)").arg(page.app.model.device).arg(deviceStatus.fallback)
                  : qsTr("In use: %1").arg(page.app.model.device)
        }

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
            objectName: "reloadModelButton"
            text: qsTr("Reload model with these settings")
            Accessible.name: qsTr("Reload model")
            onClicked: page.app.chooseModel(modelPath.text)
        }

        SettingLabel { text: qsTr("Remote servers") }
        RemoteServersSettings {
            Layout.fillWidth: true
            remotes: page.app.remotes
        }
    }

    ModelLibraryDialog {
        id: libraryDialog
        objectName: "modelLibraryDialog"
        app: page.app
    }

    FileDialog {
        id: fileDialog
        title: qsTr("Choose a GGUF model")
        nameFilters: [qsTr("GGUF models (*.gguf)"), qsTr("All files (*)")]
        onAccepted: page.app.chooseModel(selectedFile.toString())
    }
}
