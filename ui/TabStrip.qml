import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

// One tab per open conversation; a busy dot marks a tab that is generating. Tabs that do
// not fit scroll: with the arrows at either end, the mouse wheel or a drag.
RowLayout {
    id: strip
    required property TabListModel tabs
    // The tab bar's own horizontal list (Material's TabBar is a ListView).
    readonly property Flickable view: bar.contentItem
    readonly property bool overflowing: view.contentWidth > view.width + 1

    // Scrolls the tabs by `dx` pixels, no farther than their ends.
    function scrollBy(dx) {
        const end = view.originX + view.contentWidth - view.width
        view.contentX = Math.max(view.originX, Math.min(end, view.contentX + dx))
    }

    spacing: 0

    IconButton {
        objectName: "scrollTabsBack"
        visible: strip.overflowing
        enabled: strip.view.contentX > strip.view.originX + 1
        text: qsTr("Earlier tabs")
        iconName: "chevron-left"
        onClicked: strip.scrollBy(-strip.view.width * 0.75)
    }

    TabBar {
        id: bar
        objectName: "tabBar"
        // Takes the row's room, whatever its tabs' width; they scroll inside it.
        Layout.fillWidth: true
        Layout.preferredWidth: 0
        clip: true
        Accessible.name: qsTr("Open conversations")
        currentIndex: strip.tabs.currentIndex
        onCurrentIndexChanged: if (currentIndex !== strip.tabs.currentIndex) strip.tabs.currentIndex = currentIndex

        Repeater {
            model: strip.tabs
            delegate: TabButton {
                id: tab
                objectName: "tab"
                required property int index
                required property string title
                required property bool generating

                width: Math.max(140, Math.min(240, implicitWidth))
                Accessible.name: title
                onClicked: strip.tabs.currentIndex = index

                contentItem: RowLayout {
                    spacing: 4
                    BusyIndicator {
                        visible: tab.generating
                        running: tab.generating
                        Layout.preferredWidth: 16
                        Layout.preferredHeight: 16
                        Accessible.name: qsTr("Generating")
                    }
                    Label {
                        Layout.fillWidth: true
                        text: tab.title
                        elide: Text.ElideRight
                        horizontalAlignment: Text.AlignHCenter
                        color: tab.checked ? tab.Material.accentColor : tab.Material.foreground
                    }
                    IconButton {
                        objectName: "closeTabButton"
                        text: qsTr("Close tab (Ctrl+W)")
                        iconName: "close"
                        icon.width: 16
                        icon.height: 16
                        Layout.preferredWidth: 28
                        Layout.preferredHeight: 28
                        padding: 0
                        Accessible.name: qsTr("Close %1").arg(tab.title)
                        onClicked: strip.tabs.closeTab(tab.index)
                    }
                }
            }
        }
    }

    IconButton {
        objectName: "scrollTabsForward"
        visible: strip.overflowing
        enabled: strip.view.contentX < strip.view.originX + strip.view.contentWidth - strip.view.width - 1
        text: qsTr("Later tabs")
        iconName: "chevron-right"
        onClicked: strip.scrollBy(strip.view.width * 0.75)
    }
}
