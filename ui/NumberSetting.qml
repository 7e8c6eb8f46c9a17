import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// One number of a settings dialog: a slider over its range beside the value as text.
// Empty text means the default (the placeholder says which; the slider rests there).
// `problem`, set by the dialog, marks the field and says why its text is refused; the
// text stays as typed.
ColumnLayout {
    id: setting
    property string label
    property real from: 0
    property real to: 1
    property real stepSize: 0.01
    property real defaultValue: 0
    property int decimals: 2
    property alias text: field.text
    property string problem
    readonly property bool dark: Material.theme === Material.Dark

    spacing: 0

    RowLayout {
        Layout.fillWidth: true
        spacing: 8
        Slider {
            id: slider
            Layout.fillWidth: true
            from: setting.from
            to: setting.to
            stepSize: setting.stepSize
            snapMode: Slider.SnapAlways
            value: {
                const v = Number(field.text)
                return field.text.trim().length === 0 || isNaN(v) ? setting.defaultValue : v
            }
            Accessible.name: qsTr("%1 slider").arg(setting.label)
            onMoved: field.text = Number(value.toFixed(setting.decimals)).toString()
        }
        TextField {
            id: field
            objectName: setting.objectName + "Field"
            Layout.preferredWidth: 120
            placeholderText: qsTr("default (%1)").arg(setting.defaultValue)
            selectByMouse: true
            inputMethodHints: Qt.ImhFormattedNumbersOnly
            Material.accent: setting.problem.length > 0 ? Theme.errorText(setting.dark) : setting.Material.accent
            color: setting.problem.length > 0 ? Theme.errorText(setting.dark) : Material.foreground
            Accessible.name: setting.label
            Accessible.description: setting.problem
        }
    }
    Label {
        objectName: setting.objectName + "Problem"
        Layout.fillWidth: true
        visible: setting.problem.length > 0
        text: setting.label + " " + setting.problem
        color: Theme.errorText(setting.dark)
        font.pixelSize: 12
        wrapMode: Text.Wrap
        Accessible.role: Accessible.AlertMessage
        Accessible.name: text
    }
}
