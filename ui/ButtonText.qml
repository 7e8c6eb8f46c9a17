import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Templates as T

// The label of a text button that can be disabled (`contentItem: ButtonText { button:
// this }`): Material draws a disabled button's text in its hint colour, under 3:1; this
// one stays at 4.5:1 (Theme.secondaryText) on a flat button.
Label {
    required property T.AbstractButton button
    readonly property bool dark: Material.theme === Material.Dark

    text: button.text
    font: button.font
    horizontalAlignment: Text.AlignHCenter
    verticalAlignment: Text.AlignVCenter
    elide: Text.ElideRight
    color: !button.enabled ? Theme.secondaryText(dark)
         : button.highlighted && !button.flat ? button.Material.primaryHighlightedTextColor
         : button.highlighted || button.checked ? button.Material.accentColor
         : button.Material.foreground
}
