import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import Arbor.Core

// The model library (ModelLibraryPage) and its downloads over the whole window: from the
// Model settings page, the model picker in the header, and the model bar while the
// default model is missing.
Dialog {
    id: dialog
    objectName: "modelLibraryDialog"
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
