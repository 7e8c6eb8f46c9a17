import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// The model's state beside the model picker: loading progress, the error of a failed
// load, or the loaded model's details (the picker shows its name). When the default model is not installed it
// offers to download it.
Pane {
    id: status
    required property ModelService model
    required property DefaultModelDownload download
    signal settingsRequested()

    readonly property bool offerDownload: status.model.state === "failed" && status.model.missingDefaultModel
                                          && status.download.available

    padding: 6

    RowLayout {
        anchors.fill: parent
        spacing: 10

        Label {
            objectName: "modelStatusText"
            Layout.fillWidth: true
            elide: Text.ElideRight
            readonly property bool problem: status.model.state === "failed" || status.download.error.length > 0
            wrapMode: problem && !status.download.running ? Text.Wrap : Text.NoWrap
            color: problem && !status.download.running ? Theme.errorText(Material.theme === Material.Dark)
                                                       : Material.foreground
            text: {
                if (status.download.running)
                    return qsTr("Downloading the default model (94 MiB)…")
                if (status.offerDownload && status.download.error.length > 0)
                    return qsTr("Could not download the default model: %1").arg(status.download.error)
                if (status.offerDownload)
                    return qsTr("The default model is not installed yet.")
                switch (status.model.state) {
                case "loading": return qsTr("Loading %1…").arg(status.model.name)
                case "ready": return status.model.details
                case "failed": return qsTr("Could not load %1: %2").arg(status.model.path).arg(status.model.error)
                default: return qsTr("No model loaded")
                }
            }
            Accessible.name: text
        }
        ProgressBar {
            objectName: "modelProgress"
            visible: status.model.state === "loading" || status.download.running
            indeterminate: status.download.running
            value: status.model.progress
            Layout.preferredWidth: 180
            Accessible.name: status.download.running ? qsTr("Model download") : qsTr("Model loading progress")
        }
        Button {
            objectName: "downloadModelButton"
            visible: status.offerDownload && !status.download.running
            text: status.download.error.length > 0 ? qsTr("Try again") : qsTr("Download default model")
            flat: true
            Accessible.name: qsTr("Download the default model")
            onClicked: status.download.start()
        }
        Button {
            visible: (status.model.state === "failed" || status.model.state === "none") && !status.download.running
            text: qsTr("Choose model…")
            flat: true
            onClicked: status.settingsRequested()
        }
    }
}
