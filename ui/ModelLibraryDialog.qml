import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import Arbor.Core

// The model library and its downloads over the window: opened from the Model settings
// page, and from the model bar while the default model is missing.
Dialog {
    id: dialog
    required property ArborApp app
    title: qsTr("Models")
    modal: true
    standardButtons: Dialog.Close
    parent: Overlay.overlay
    width: parent ? parent.width - 40 : 760
    height: parent ? parent.height - 40 : 600
    anchors.centerIn: parent
    // As in the settings window: no shader-drawn shadow under the software renderer.
    Material.elevation: contentItem.GraphicsInfo.api === GraphicsInfo.Software ? 0 : 24

    ModelLibraryPage {
        objectName: "modelLibraryPage"
        anchors.fill: parent
        app: dialog.app
    }
}
