import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Arbor.Core

// One tab per open conversation; a busy dot marks a tab that is generating.
TabBar {
    id: strip
    required property TabListModel tabs

    currentIndex: tabs.currentIndex
    onCurrentIndexChanged: if (currentIndex !== tabs.currentIndex) tabs.currentIndex = currentIndex
    Accessible.name: qsTr("Open conversations")

    Repeater {
        model: strip.tabs
        delegate: TabButton {
            id: tab
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
                }
                ToolButton {
                    objectName: "closeTabButton"
                    text: "×"
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
