import QtQuick
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// Settings page: the local OpenAI-compatible API server.
SettingsPage {
    id: page
    required property ArborApp app
    readonly property bool dark: Material.theme === Material.Dark

    // Gives every text field below `item` the readable placeholder colour (Material's own
    // is under 3:1), from here so that ApiSettings keeps to its own fields.
    function readablePlaceholders(item) {
        for (let i = 0; i < item.children.length; ++i) {
            const child = item.children[i]
            if (child.placeholderTextColor !== undefined)
                child.placeholderTextColor = Qt.binding(() => Theme.secondaryText(page.dark))
            readablePlaceholders(child)
        }
    }

    title: qsTr("Local API")

    ApiSettings {
        id: api
        Layout.fillWidth: true
        api: page.app.api
        Component.onCompleted: page.readablePlaceholders(api)
    }
}
