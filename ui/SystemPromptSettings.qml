import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// The system prompt of every conversation that sets none of its own, and named presets
// to fill it (or a conversation's) from. The default is saved as it is typed; a preset
// name is checked in place (Save as preset stays disabled while it is refused).
ColumnLayout {
    id: page
    required property AppSettings settings
    readonly property string nameProblem: settings.presetNameProblem(presetName.text)
    readonly property bool dark: Material.theme === Material.Dark

    spacing: 6

    Label { text: qsTr("Default system prompt (for conversations without their own)") }
    TextArea {
        id: defaultPrompt
        objectName: "defaultSystemPromptField"
        Layout.fillWidth: true
        Layout.preferredHeight: 80
        wrapMode: TextEdit.Wrap
        placeholderText: qsTr("none")
        placeholderTextColor: Theme.secondaryText(page.dark)
        text: page.settings.defaultSystemPrompt
        Accessible.name: qsTr("Default system prompt")
        onTextChanged: if (text !== page.settings.defaultSystemPrompt) page.settings.defaultSystemPrompt = text
    }
    SettingHint {
        visible: presets.count === 0
        text: qsTr("No presets yet: name the prompt below to keep it as one.")
    }
    RowLayout {
        Layout.fillWidth: true
        visible: presets.count > 0
        SettingComboBox {
            id: presets
            objectName: "defaultPresetBox"
            Layout.fillWidth: true
            model: page.settings.systemPromptPresets
            textRole: "name"
            Accessible.name: qsTr("Presets")
        }
        Button {
            text: qsTr("Use")
            Accessible.name: qsTr("Use the preset as the default system prompt")
            onClicked: defaultPrompt.text = page.settings.systemPromptPresets[presets.currentIndex].text
        }
        Button {
            text: qsTr("Delete")
            flat: true
            Accessible.name: qsTr("Delete the preset")
            onClicked: page.settings.removePreset(presets.currentText)
        }
    }
    RowLayout {
        Layout.fillWidth: true
        TextField {
            id: presetName
            objectName: "presetNameField"
            Layout.fillWidth: true
            placeholderText: qsTr("Preset name")
            placeholderTextColor: Theme.secondaryText(page.dark)
            selectByMouse: true
            Accessible.name: qsTr("Preset name")
            Accessible.description: page.nameProblem
        }
        Button {
            objectName: "savePresetButton"
            text: qsTr("Save as preset")
            flat: true
            contentItem: ButtonText { button: parent }
            enabled: page.nameProblem.length === 0 && defaultPrompt.text.trim().length > 0
            Accessible.name: qsTr("Save the default system prompt as a preset")
            onClicked: {
                page.settings.savePreset(presetName.text, defaultPrompt.text)
                presetName.text = ""
            }
        }
    }
    Label {
        objectName: "presetNameProblem"
        visible: presetName.text.length > 0 && page.nameProblem.length > 0
        text: page.nameProblem
        color: Theme.errorText(page.dark)
        font.pixelSize: Theme.captionSize
    }
}
