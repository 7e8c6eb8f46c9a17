import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Arbor.Core

// Settings page: where Arbor keeps its data.
SettingsPage {
    id: page
    required property ArborApp app

    title: qsTr("Storage")

    SettingsGrid {

        SettingLabel { text: qsTr("Database") }
        TextField {
            objectName: "databasePathField"
            Layout.fillWidth: true
            text: page.app.databasePath
            readOnly: true
            selectByMouse: true
            Accessible.name: qsTr("Database file")
        }
        Item { implicitWidth: 1 }
        SettingHint { text: qsTr("Conversations, their settings and the app's settings are kept in this SQLite file.") }
    }
}
