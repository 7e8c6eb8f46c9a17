import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Arbor.Core

// Where the KV cache is kept beyond memory: the disk tier's budget (0 turns it off) and
// the KV element type. Both are saved at once and take effect when the model is
// (re)loaded.
GridLayout {
    id: page
    required property AppSettings settings

    columns: 2

    Label { text: qsTr("KV disk cache (MiB, 0: off)") }
    SpinBox {
        id: diskBudget
        objectName: "kvDiskField"
        from: 0
        to: page.settings.maxKvDiskMiB
        stepSize: 256
        value: page.settings.kvDiskMiB
        editable: true
        Accessible.name: qsTr("KV disk cache in MiB")
        onValueModified: page.settings.kvDiskMiB = value
    }
    Label { text: qsTr("KV cache type") }
    ComboBox {
        id: kvType
        objectName: "kvTypeBox"
        readonly property var values: ["f16", "q8_0", "f32"]
        model: [qsTr("F16 (default)"), qsTr("Q8_0 (about half the memory)"), qsTr("F32 (twice the memory)")]
        currentIndex: Math.max(0, values.indexOf(page.settings.kvType))
        Layout.fillWidth: true
        Accessible.name: qsTr("KV cache type")
        onActivated: index => page.settings.kvType = values[index]
    }
    Label {
        Layout.columnSpan: 2
        Layout.fillWidth: true
        text: page.settings.kvDiskMiB > 0
              ? qsTr("Conversations' KV is kept in %1, so they continue at once after a restart. Changes apply when the model is reloaded.").arg(page.settings.kvDiskDirectory)
              : qsTr("Off: after a restart a conversation's history is computed again. Changes apply when the model is reloaded.")
        wrapMode: Text.Wrap
        opacity: 0.6
        font.pixelSize: 11
    }
}
