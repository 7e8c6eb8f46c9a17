import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// Drawn above the first message the model still sees when a conversation outgrew the
// model's context: the `count` messages above it were left out of the prompt.
RowLayout {
    id: marker
    property int count: 0

    spacing: 8
    Rectangle { Layout.fillWidth: true; implicitHeight: 1; color: marker.Material.hintTextColor }
    Label {
        objectName: "omittedTurnsMarker"
        text: marker.count === 1 ? qsTr("1 earlier message is not part of the model's context")
                                 : qsTr("%1 earlier messages are not part of the model's context").arg(marker.count)
        font.pixelSize: 12
        opacity: 0.8
        Accessible.role: Accessible.StaticText
        Accessible.name: text
    }
    Rectangle { Layout.fillWidth: true; implicitHeight: 1; color: marker.Material.hintTextColor }
}
