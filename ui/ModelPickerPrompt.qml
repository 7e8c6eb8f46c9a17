import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// Asks, when the conversation shown last used another model than the one loaded, whether
// to switch to that model or keep the current one (ModelPicker's suggestion). Closing it
// any other way keeps the current model.
Dialog {
    id: prompt
    objectName: "modelSwitchPrompt"
    required property ModelPicker picker
    required property ModelService model

    title: qsTr("Switch models?")
    modal: true
    parent: Overlay.overlay
    anchors.centerIn: parent
    width: Math.min(480, parent ? parent.width - 40 : 480)
    // As in the settings window: no shader-drawn shadow under the software renderer.
    Material.elevation: contentItem.GraphicsInfo.api === GraphicsInfo.Software ? 0 : 24

    function follow() {
        if (prompt.picker.suggestedPath.length > 0) prompt.open()
        else prompt.close()
    }
    Component.onCompleted: follow()
    Connections {
        target: prompt.picker
        function onSuggestionChanged() { prompt.follow() }
    }

    Label {
        objectName: "modelSwitchText"
        width: prompt.availableWidth
        wrapMode: Text.Wrap
        text: qsTr("“%1” was last used with %2. Switch to it, or keep %3 for this conversation?")
              .arg(prompt.picker.suggestedFor).arg(prompt.picker.suggestedName)
              .arg(prompt.model.name.length > 0 ? prompt.model.name : qsTr("the current model"))
    }

    footer: DialogButtonBox {
        Button {
            objectName: "keepModelButton"
            text: qsTr("Keep current")
            flat: true
            DialogButtonBox.buttonRole: DialogButtonBox.RejectRole
        }
        Button {
            objectName: "switchModelButton"
            text: qsTr("Switch to %1").arg(prompt.picker.suggestedName)
            flat: true
            DialogButtonBox.buttonRole: DialogButtonBox.AcceptRole
        }
    }

    onAccepted: prompt.picker.acceptSuggestion()
    // However it closed (Keep, Escape, a click beside it), the question is answered; after
    // Switch this only confirms what choosing the model already recorded.
    onClosed: if (prompt.picker.suggestedPath.length > 0) prompt.picker.keepCurrentModel()
}
