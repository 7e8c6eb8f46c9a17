import QtQuick
import QtQuick.Layouts

// The settings of a page in two columns, SettingLabel then control, spaced alike on
// every page; in one column on a narrow page.
GridLayout {
    Layout.fillWidth: true
    // Labels above their controls where two columns do not fit.
    columns: width >= 2 * Theme.settingsLabelWidth + 200 ? 2 : 1
    columnSpacing: 16
    rowSpacing: 10
}
