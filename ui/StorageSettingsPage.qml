import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Arbor.Core

// Settings page: where Arbor keeps its data: the database, and the KV cache beyond
// memory (the disk tier's budget, 0 turning it off, and the KV element type; both are
// saved at once and take effect when the model is reloaded).
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

        SettingLabel { text: qsTr("KV disk cache (MiB)") }
        SpinBox {
            objectName: "kvDiskField"
            from: 0
            to: page.app.settings.maxKvDiskMiB
            stepSize: 256
            value: page.app.settings.kvDiskMiB
            editable: true
            Accessible.name: qsTr("KV disk cache in MiB")
            onValueModified: page.app.settings.kvDiskMiB = value
        }
        Item { implicitWidth: 1 }
        SettingHint {
            text: page.app.settings.kvDiskMiB > 0
                  ? qsTr("Conversations' KV is kept in %1, so they continue at once after a restart. 0 turns this off.").arg(page.app.settings.kvDiskDirectory)
                  : qsTr("Off: after a restart a conversation's history is computed again.")
        }

        SettingLabel { text: qsTr("KV cache type") }
        SettingComboBox {
            objectName: "kvTypeBox"
            readonly property var values: ["f16", "q8_0", "f32"]
            model: [qsTr("F16 (default)"), qsTr("Q8_0 (about half the memory)"), qsTr("F32 (twice the memory)")]
            currentIndex: Math.max(0, values.indexOf(page.app.settings.kvType))
            Layout.fillWidth: true
            Accessible.name: qsTr("KV cache type")
            onActivated: index => page.app.settings.kvType = values[index]
        }
        Item { implicitWidth: 1 }
        SettingHint { text: qsTr("Both take effect when the model is reloaded (Model page).") }
    }
}
