import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// The bottom line of the window: the model, what runs it (and why not the GPU, when one
// was asked for and the CPU runs it; in full in its tooltip), and how much of its
// context the current conversation takes (e.g. "3.1k / 8.2k tokens").
Pane {
    id: bar
    required property ModelService model
    property ChatSession session: null

    DeviceStatus {
        id: deviceStatus
        model: bar.model
    }

    // 950 -> "950", 3140 -> "3.1k", 8192 -> "8.2k"
    function tokens(n) {
        return n < 1000 ? String(n) : (n / 1000).toFixed(1).replace(/\.0$/, "") + "k"
    }

    topPadding: 2
    bottomPadding: 2
    leftPadding: 10
    rightPadding: 10

    RowLayout {
        anchors.fill: parent
        spacing: 16
        Label {
            objectName: "statusModel"
            Layout.fillWidth: true
            Layout.maximumWidth: implicitWidth
            // The GPU's reason gives way first (it is in full in its tooltip).
            Layout.minimumWidth: Math.min(implicitWidth, bar.availableWidth / 2)
            elide: Text.ElideRight
            font.pixelSize: Theme.captionSize
            text: bar.model.ready ? bar.model.name + "  ·  " + bar.model.device : qsTr("No model loaded")
            Accessible.name: text
        }
        Label {
            objectName: "statusDeviceFallback"
            visible: bar.model.ready && deviceStatus.fallback.length > 0
            Layout.fillWidth: true
            Layout.maximumWidth: implicitWidth
            elide: Text.ElideRight
            font.pixelSize: Theme.captionSize
            color: Theme.secondaryText(Material.theme === Material.Dark)
            text: qsTr("GPU not used: %1").arg(deviceStatus.fallback)
            Accessible.name: text
            ToolTip.visible: fallbackArea.containsMouse
            ToolTip.text: qsTr("The model runs on the CPU because %1. The device is chosen in Settings › Model.").arg(deviceStatus.fallback)
            MouseArea {
                id: fallbackArea
                anchors.fill: parent
                hoverEnabled: true
            }
        }
        Item { Layout.fillWidth: true }
        Label {
            objectName: "statusContext"
            // The local model's context; a remote server's is its own.
            visible: bar.model.ready && bar.session !== null && !bar.session.remote
            font.pixelSize: Theme.captionSize
            text: bar.session ? qsTr("%1 / %2 tokens").arg(bar.tokens(bar.session.contextTokens)).arg(bar.tokens(bar.model.contextSize)) : ""
            Accessible.name: qsTr("Context used: %1").arg(text)
            ToolTip.visible: contextArea.containsMouse
            ToolTip.text: qsTr("Tokens of this conversation in the model's context")
            MouseArea {
                id: contextArea
                anchors.fill: parent
                hoverEnabled: true
            }
        }
    }
}
