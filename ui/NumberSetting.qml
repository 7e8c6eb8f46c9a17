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
    // The slider moves over the logarithm of the value (a range of many magnitudes).
    property bool logarithmic: false
    property alias text: field.text
    property string problem
    readonly property bool dark: Material.theme === Material.Dark

    spacing: 0

    // Where the slider stands for the value `v`.
    function position(v) { return logarithmic ? Math.log(Math.max(v, from)) : v }

    RowLayout {
        Layout.fillWidth: true
        spacing: 8
        Slider {
            id: slider
            Layout.fillWidth: true
            from: setting.position(setting.from)
            to: setting.position(setting.to)
            stepSize: setting.logarithmic ? 0 : setting.stepSize
            snapMode: setting.logarithmic ? Slider.NoSnap : Slider.SnapAlways
            value: {
                const v = Number(field.text)
                return setting.position(field.text.trim().length === 0 || isNaN(v) ? setting.defaultValue : v)
            }
            Accessible.name: qsTr("%1 slider").arg(setting.label)
            onMoved: {
                const v = setting.logarithmic ? Math.exp(value) : value
                field.text = Number(v.toFixed(setting.decimals)).toString()
            }
        }
        TextField {
            id: field
            objectName: setting.objectName + "Field"
            Layout.preferredWidth: 120
            placeholderText: qsTr("default (%1)").arg(setting.defaultValue)
            placeholderTextColor: Theme.secondaryText(setting.dark)
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
        font.pixelSize: Theme.captionSize
        wrapMode: Text.Wrap
        Accessible.role: Accessible.AlertMessage
        Accessible.name: text
    }
}
