import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material

// A tool button that shows one of Arbor's icons (ui/icons/NAME.png) instead of its
// text; the text is its tooltip and its accessible name. Disabled, the icon takes the
// readable secondary colour rather than Material's faint hint colour.
ToolButton {
    id: button
    property string iconName
    readonly property bool dark: Material.theme === Material.Dark

    display: AbstractButton.IconOnly
    icon.source: "icons/" + iconName + ".png"
    icon.width: Theme.iconSize
    icon.height: Theme.iconSize
    icon.color: !enabled ? Theme.secondaryText(dark) : checked || highlighted ? Material.accentColor : Material.foreground
    Accessible.name: text
    ToolTip.visible: hovered && text.length > 0
    ToolTip.delay: 500
    ToolTip.text: text
}
