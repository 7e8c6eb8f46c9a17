import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// The bottom line of the window: the model, what runs it, and how much of its context
// the current conversation takes (e.g. "3.1k / 8.2k tokens").
Pane {
    id: bar
    required property ModelService model
    property ChatSession session: null

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
            elide: Text.ElideRight
            font.pixelSize: Theme.captionSize
            text: bar.model.ready ? bar.model.name + "  ·  " + bar.model.device : qsTr("No model loaded")
            Accessible.name: text
        }
        Label {
            objectName: "statusContext"
            visible: bar.model.ready && bar.session !== null
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
