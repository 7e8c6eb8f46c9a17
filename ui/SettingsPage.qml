import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// One page of the settings window: its title, then its settings (the children), which
// scroll when they do not fit. They keep clear of the vertical scroll bar, which is
// drawn over the content.
ScrollView {
    id: page
    required property string title
    default property alias settings: column.data

    contentWidth: availableWidth
    clip: true

    ColumnLayout {
        id: column
        width: page.availableWidth - (page.ScrollBar.vertical.visible ? page.ScrollBar.vertical.width + 8 : 0)
        spacing: 14

        Label {
            text: page.title
            font.pixelSize: Theme.titleSize
            font.bold: true
            Accessible.role: Accessible.Heading
        }
    }
}
