import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// A line of explanation under a setting, in the secondary text colour.
Label {
    Layout.fillWidth: true
    wrapMode: Text.Wrap
    font.pixelSize: Theme.captionSize
    color: Theme.secondaryText(Material.theme === Material.Dark)
}
