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
        ComboBox {
            id: themeBox
            objectName: "themeBox"
            readonly property var choices: [qsTr("Follow system"), qsTr("Light"), qsTr("Dark")]
            readonly property var values: ["system", "light", "dark"]
            model: choices
            // As wide as its longest choice in the font it is drawn with, so none is cut
            // (WidestText alone measured too narrow on X11, cutting "Follow system").
            implicitContentWidthPolicy: ComboBox.WidestText
            FontMetrics {
                id: themeMetrics
                font: themeBox.font
            }
            readonly property real widestChoice: Math.ceil(Math.max(...choices.map(text => themeMetrics.advanceWidth(text))))
            Layout.minimumWidth: widestChoice + contentItem.leftPadding + contentItem.rightPadding + leftPadding + rightPadding
            currentIndex: Math.max(0, values.indexOf(page.app.settings.theme))
            Accessible.name: qsTr("Theme")
            onActivated: index => page.app.settings.theme = values[index]
        }
    }
}
