import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// The context length of the loaded model, kept per model file: how many tokens of a
// conversation its prompt may hold (empty: the context the model was trained with). A
// value the model cannot take is marked with the reason where it was typed; Apply keeps
// it and reloads the model, whose engine is made with it. Longer conversations leave
// their oldest turns out of the prompt (README "Context length").
ColumnLayout {
    id: setting
    required property ArborApp app
    readonly property ModelService model: app.model
    readonly property int trained: model.trainedContext
    readonly property var stored: app.settings.contextLengths[model.path]
    readonly property string storedText: stored === undefined ? "" : String(stored)
    readonly property string problem: app.settings.contextLengthProblem(length.text, trained)

    spacing: 4
    enabled: model.ready

    NumberSetting {
        id: length
        objectName: "contextLength"
        Layout.fillWidth: true
        label: qsTr("Context length")
        from: 256
        to: Math.max(256, setting.trained)
        stepSize: 256
        decimals: 0
        defaultValue: setting.trained
        problem: setting.problem
        text: setting.storedText
    }
    RowLayout {
        Layout.fillWidth: true
        Label {
            objectName: "contextLengthInUse"
            Layout.fillWidth: true
            text: setting.model.ready
                  ? qsTr("In use: %1 tokens (the model was trained with %2)").arg(setting.model.contextSize).arg(setting.trained)
                  : qsTr("Load a model to set its context length")
            font.pixelSize: Theme.captionSize
            color: Theme.secondaryText(Material.theme === Material.Dark)
            wrapMode: Text.Wrap
        }
        Button {
            objectName: "applyContextLength"
            text: qsTr("Apply (reloads the model)")
            flat: true
            contentItem: ButtonText { button: parent }
            enabled: setting.problem.length === 0 && length.text.trim() !== setting.storedText
            Accessible.name: qsTr("Apply the context length and reload the model")
            onClicked: {
                if (setting.app.settings.setContextLength(setting.model.path, length.text, setting.trained).length === 0)
                    setting.app.reloadModel()
            }
        }
    }
}
