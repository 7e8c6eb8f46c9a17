import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// Per-conversation settings; an empty field means the default shown as placeholder.
Dialog {
    id: dialog
    property ChatSession session: null

    title: qsTr("Conversation settings")
    modal: true
    standardButtons: Dialog.Save | Dialog.Cancel
    width: 480

    function field(value) { return value === undefined || value === null ? "" : String(value) }

    onAboutToShow: {
        errorLabel.text = ""
        if (!session) return
        systemPrompt.text = session.systemPrompt
        temperature.text = field(session.temperature)
        topP.text = field(session.topP)
        topK.text = field(session.topK)
        maxTokens.text = field(session.maxTokens)
    }
    onAccepted: {
        if (!session) return
        const error = session.saveSettings({
            systemPrompt: systemPrompt.text, temperature: temperature.text, topP: topP.text,
            topK: topK.text, maxTokens: maxTokens.text })
        if (error.length > 0) {
            errorLabel.text = error
            open()
        }
    }

    GridLayout {
        anchors.fill: parent
        columns: 2
        columnSpacing: 12

        Label { text: qsTr("System prompt") }
        TextArea {
            id: systemPrompt
            Layout.fillWidth: true
            Layout.preferredHeight: 90
            wrapMode: TextEdit.Wrap
            placeholderText: qsTr("none")
            Accessible.name: qsTr("System prompt")
        }
        Label { text: qsTr("Temperature") }
        TextField {
            id: temperature
            Layout.fillWidth: true
            placeholderText: qsTr("default (%1)").arg(0.7)
            inputMethodHints: Qt.ImhFormattedNumbersOnly
            Accessible.name: qsTr("Temperature")
        }
        Label { text: qsTr("Top-p") }
        TextField {
            id: topP
            Layout.fillWidth: true
            placeholderText: qsTr("default (%1)").arg(0.9)
            inputMethodHints: Qt.ImhFormattedNumbersOnly
            Accessible.name: qsTr("Top-p")
        }
        Label { text: qsTr("Top-k") }
        TextField {
            id: topK
            Layout.fillWidth: true
            placeholderText: qsTr("default (%1)").arg(40)
            inputMethodHints: Qt.ImhDigitsOnly
            Accessible.name: qsTr("Top-k")
        }
        Label { text: qsTr("Max tokens") }
        TextField {
            id: maxTokens
            Layout.fillWidth: true
            placeholderText: qsTr("default (%1)").arg(1024)
            inputMethodHints: Qt.ImhDigitsOnly
            Accessible.name: qsTr("Maximum reply tokens")
        }
        Label {
            id: errorLabel
            Layout.columnSpan: 2
            visible: text.length > 0
            color: Theme.errorText(dialog.Material.theme === Material.Dark)
            wrapMode: Text.Wrap
        }
    }
}
