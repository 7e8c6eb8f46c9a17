import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// Per-conversation settings; an empty field means the default its placeholder shows.
// Every field is checked as it is typed (by ChatSession.settingsProblems, the same rules
// Save applies): a refused one is marked with its reason and Save stays disabled; nothing
// typed is lost.
Dialog {
    id: dialog
    objectName: "conversationSettingsDialog"
    property ChatSession session: null
    property AppSettings settings: null

    title: qsTr("Conversation settings")
    modal: true
    // No shadow under the software renderer (see SettingsDialog).
    Material.elevation: contentItem.GraphicsInfo.api === GraphicsInfo.Software ? 0 : 24
    width: Math.min(560, parent ? parent.width - 40 : 560)
    height: Math.min(720, parent ? parent.height - 40 : 720)

    readonly property var fields: ({
        systemPrompt: systemPrompt.text, temperature: temperature.text, topP: topP.text, topK: topK.text,
        maxTokens: maxTokens.text, repetitionPenalty: repetitionPenalty.text, minP: minP.text,
        seed: seed.text, stopStrings: stopStrings.text })
    readonly property var problems: session ? session.settingsProblems(fields) : ({})
    readonly property bool valid: Object.keys(problems).length === 0
    readonly property bool dark: Material.theme === Material.Dark

    function field(value) { return value === undefined || value === null ? "" : String(value) }

    onAboutToShow: {
        saveError.text = ""
        if (!session) return
        systemPrompt.text = session.systemPrompt
        temperature.text = field(session.temperature)
        topP.text = field(session.topP)
        topK.text = field(session.topK)
        maxTokens.text = field(session.maxTokens)
        repetitionPenalty.text = field(session.repetitionPenalty)
        minP.text = field(session.minP)
        seed.text = field(session.seed)
        stopStrings.text = session.stopStrings
    }
    onAccepted: {
        if (!session) return
        const error = session.saveSettings(fields)
        if (error.length > 0) {  // the fields were valid a moment ago: say so and keep them
            saveError.text = error
            open()
        }
    }

    footer: DialogButtonBox {
        Button {
            objectName: "saveSettingsButton"
            text: qsTr("Save")
            flat: true
            contentItem: ButtonText { button: parent }
            enabled: dialog.valid
            DialogButtonBox.buttonRole: DialogButtonBox.AcceptRole
            Accessible.name: qsTr("Save conversation settings")
        }
        Button {
            text: qsTr("Cancel")
            flat: true
            DialogButtonBox.buttonRole: DialogButtonBox.RejectRole
            Accessible.name: qsTr("Cancel")
        }
    }

    ScrollView {
        id: scroll
        anchors.fill: parent
        contentWidth: availableWidth
        clip: true

        GridLayout {
            id: grid
            width: scroll.availableWidth - 14  // clear of the scroll bar
            columns: 2
            columnSpacing: 12
            rowSpacing: 4

            Label { text: qsTr("System prompt"); Layout.alignment: Qt.AlignTop | Qt.AlignLeft; Layout.topMargin: 8 }
            ColumnLayout {
                Layout.fillWidth: true
                spacing: 2
                ComboBox {
                    objectName: "presetBox"
                    Layout.fillWidth: true
                    visible: dialog.settings !== null && dialog.settings.systemPromptPresets.length > 0
                    model: dialog.settings ? dialog.settings.systemPromptPresets : []
                    textRole: "name"
                    displayText: qsTr("Use a preset…")
                    Accessible.name: qsTr("System prompt preset")
                    onActivated: index => systemPrompt.text = model[index].text
                }
                TextArea {
                    id: systemPrompt
                    objectName: "systemPromptField"
                    Layout.fillWidth: true
                    Layout.preferredHeight: 80
                    wrapMode: TextEdit.Wrap
                    placeholderTextColor: Theme.secondaryText(dialog.dark)
                    placeholderText: dialog.settings && dialog.settings.defaultSystemPrompt.length > 0
                                     ? qsTr("default: %1").arg(dialog.settings.defaultSystemPrompt) : qsTr("none")
                    Accessible.name: qsTr("System prompt")
                }
            }
            Label { text: qsTr("Temperature") }
            NumberSetting {
                id: temperature
                objectName: "temperature"
                Layout.fillWidth: true
                label: qsTr("Temperature")
                to: 2
                stepSize: 0.05
                defaultValue: 0.7
                problem: dialog.problems.temperature || ""
            }
            Label { text: qsTr("Top-p") }
            NumberSetting {
                id: topP
                objectName: "topP"
                Layout.fillWidth: true
                label: qsTr("Top-p")
                defaultValue: 0.9
                problem: dialog.problems.topP || ""
            }
            Label { text: qsTr("Min-p") }
            NumberSetting {
                id: minP
                objectName: "minP"
                Layout.fillWidth: true
                label: qsTr("Min-p")
                defaultValue: 0.05
                problem: dialog.problems.minP || ""
            }
            Label { text: qsTr("Top-k") }
            NumberSetting {
                id: topK
                objectName: "topK"
                Layout.fillWidth: true
                label: qsTr("Top-k")
                to: 1000
                stepSize: 1
                decimals: 0
                defaultValue: 40
                problem: dialog.problems.topK || ""
            }
            Label { text: qsTr("Repetition penalty") }
            NumberSetting {
                id: repetitionPenalty
                objectName: "repetitionPenalty"
                Layout.fillWidth: true
                label: qsTr("Repetition penalty")
                from: 0.5
                to: 2
                defaultValue: 1
                problem: dialog.problems.repetitionPenalty || ""
            }
            Label { text: qsTr("Max tokens") }
            NumberSetting {
                id: maxTokens
                objectName: "maxTokens"
                Layout.fillWidth: true
                label: qsTr("Max tokens")
                // The whole range the field accepts (ConversationSettingsForm's
                // kMaxMaxTokens), on a logarithmic slider: 1 to 1,048,576.
                from: 1
                to: 1048576
                logarithmic: true
                stepSize: 1
                decimals: 0
                defaultValue: 1024
                problem: dialog.problems.maxTokens || ""
            }
            Label { text: qsTr("Seed") }
            ColumnLayout {
                Layout.fillWidth: true
                spacing: 0
                TextField {
                    id: seed
                    objectName: "seedField"
                    Layout.fillWidth: true
                    placeholderTextColor: Theme.secondaryText(dialog.dark)
                    placeholderText: qsTr("random for each reply")
                    selectByMouse: true
                    inputMethodHints: Qt.ImhDigitsOnly
                    color: dialog.problems.seed ? Theme.errorText(dialog.dark) : Material.foreground
                    Accessible.name: qsTr("Seed")
                    Accessible.description: dialog.problems.seed || ""
                }
                Label {
                    objectName: "seedProblem"
                    visible: text.length > 0
                    text: dialog.problems.seed ? qsTr("Seed %1").arg(dialog.problems.seed) : ""
                    color: Theme.errorText(dialog.dark)
                    font.pixelSize: Theme.captionSize
                }
            }
            Label { text: qsTr("Stop strings"); Layout.alignment: Qt.AlignTop | Qt.AlignLeft; Layout.topMargin: 8 }
            ColumnLayout {
                Layout.fillWidth: true
                spacing: 0
                TextArea {
                    id: stopStrings
                    objectName: "stopStringsField"
                    Layout.fillWidth: true
                    Layout.preferredHeight: 64
                    placeholderTextColor: Theme.secondaryText(dialog.dark)
                    placeholderText: qsTr("one a line; \\n for a line break")
                    color: dialog.problems.stopStrings ? Theme.errorText(dialog.dark) : Material.foreground
                    Accessible.name: qsTr("Stop strings")
                    Accessible.description: dialog.problems.stopStrings || ""
                }
                Label {
                    visible: text.length > 0
                    text: dialog.problems.stopStrings ? qsTr("Stop strings: %1").arg(dialog.problems.stopStrings) : ""
                    color: Theme.errorText(dialog.dark)
                    font.pixelSize: Theme.captionSize
                }
            }
            Label {
                id: saveError
                Layout.columnSpan: 2
                Layout.fillWidth: true
                visible: text.length > 0
                color: Theme.errorText(dialog.dark)
                wrapMode: Text.Wrap
            }
        }
    }
}
