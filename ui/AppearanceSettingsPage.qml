import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Arbor.Core

// Settings page: the theme.
SettingsPage {
    id: page
    required property ArborApp app

    title: qsTr("Appearance")

    SettingsGrid {

        SettingLabel { text: qsTr("Theme") }
        SettingComboBox {
            objectName: "themeBox"
            model: [qsTr("Follow system"), qsTr("Light"), qsTr("Dark")]
            readonly property var values: ["system", "light", "dark"]
            currentIndex: Math.max(0, values.indexOf(page.app.settings.theme))
            Accessible.name: qsTr("Theme")
            onActivated: index => page.app.settings.theme = values[index]
        }
    }
}
