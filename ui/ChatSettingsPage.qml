import QtQuick
import QtQuick.Layouts
import Arbor.Core

// Settings page: what every conversation starts with (the default system prompt and its
// presets).
SettingsPage {
    id: page
    required property ArborApp app

    title: qsTr("Chat")

    SystemPromptSettings {
        Layout.fillWidth: true
        settings: page.app.settings
    }
}
