import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Arbor.Core

// The model's state above the chat: loading progress, the error of a failed load, or
// the loaded model's name and details.
Pane {
    id: status
    required property ModelService model
    signal settingsRequested()

    padding: 6

    RowLayout {
        anchors.fill: parent
        spacing: 10

        Label {
            objectName: "modelStatusText"
            Layout.fillWidth: true
            elide: Text.ElideRight
            wrapMode: status.model.state === "failed" ? Text.Wrap : Text.NoWrap
            color: status.model.state === "failed" ? "#c62828" : palette.windowText
            text: {
                switch (status.model.state) {
                case "loading": return qsTr("Loading %1…").arg(status.model.name)
                case "ready": return status.model.name + "  ·  " + status.model.details
                case "failed": return qsTr("Could not load %1: %2").arg(status.model.path).arg(status.model.error)
                default: return qsTr("No model loaded")
                }
            }
            Accessible.name: text
        }
        ProgressBar {
            objectName: "modelProgress"
            visible: status.model.state === "loading"
            value: status.model.progress
            Layout.preferredWidth: 180
            Accessible.name: qsTr("Model loading progress")
        }
        Button {
            visible: status.model.state === "failed" || status.model.state === "none"
            text: qsTr("Choose model…")
            flat: true
            onClicked: status.settingsRequested()
        }
    }
}
