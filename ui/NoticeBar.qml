import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// A message the user must see (a database moved aside, a failed write, what the loaded
// model's file gets wrong), until dismissed.
Pane {
    id: bar
    objectName: "noticeBar"
    property string text
    signal dismissed()

    visible: text.length > 0
    Material.background: Material.color(Material.Amber, Material.Shade100)
    Material.foreground: "black"
    Accessible.role: Accessible.AlertMessage
    Accessible.name: text

    RowLayout {
        anchors.fill: parent
        Label {
            objectName: "noticeText"
            Layout.fillWidth: true
            text: bar.text
            wrapMode: Text.Wrap
        }
        Button {
            objectName: "noticeDismiss"
            text: qsTr("Dismiss")
            flat: true
            Accessible.name: qsTr("Dismiss notice")
            onClicked: bar.dismissed()
        }
    }
}
