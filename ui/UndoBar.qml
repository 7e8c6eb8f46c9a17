import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// "Deleted 'title' — Undo" while a deletion can still be taken back (ArborApp deletes for
// good when its time runs out, at the next deletion, or when the app closes).
Pane {
    id: bar
    objectName: "undoBar"
    property string title
    signal undo()

    visible: title.length > 0
    padding: 6
    leftPadding: 14
    Material.elevation: 6
    Material.background: Material.theme === Material.Dark ? "#e0e0e0" : "#323232"
    Material.foreground: Material.theme === Material.Dark ? "#000000" : "#ffffff"
    Accessible.role: Accessible.AlertMessage
    Accessible.name: undoText.text

    RowLayout {
        anchors.fill: parent
        spacing: 12
        Label {
            id: undoText
            objectName: "undoText"
            Layout.fillWidth: true
            text: qsTr("Deleted “%1”").arg(bar.title)
            elide: Text.ElideRight
        }
        Button {
            objectName: "undoButton"
            text: qsTr("Undo")
            flat: true
            Material.foreground: Material.theme === Material.Dark ? "#00695c" : "#80cbc4"
            Accessible.name: qsTr("Undo delete")
            onClicked: bar.undo()
        }
    }
}
