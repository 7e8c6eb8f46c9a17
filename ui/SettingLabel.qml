import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// The name of a setting in the label column of a settings page: one width on every page
// (Theme.settingsLabelWidth), so the controls beside the labels line up.
Label {
    Layout.preferredWidth: Theme.settingsLabelWidth
    Layout.alignment: Qt.AlignVCenter | Qt.AlignLeft
    wrapMode: Text.Wrap
}
