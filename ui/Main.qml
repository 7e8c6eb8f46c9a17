import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Arbor.Core

ApplicationWindow {
    id: window
    required property ArborApp app

    visible: true
    width: 1100
    height: 720
    minimumWidth: 640
    minimumHeight: 420
    title: app.tabs.current && app.tabs.current.title ? app.tabs.current.title + " - Arbor" : "Arbor"

    Material.theme: app.settings.theme === "dark" ? Material.Dark
                  : app.settings.theme === "light" ? Material.Light : Material.System
    Material.accent: Material.Teal
    // For what draws with the palette rather than Material's colours: links and selected
    // text in messages.
    palette.link: Theme.link(Material.theme === Material.Dark)
    palette.highlight: Material.accentColor
    palette.highlightedText: Material.theme === Material.Dark ? "#000000" : "#ffffff"

    Shortcut {
        sequences: ["Ctrl+N"]
        context: Qt.ApplicationShortcut
        onActivated: window.app.tabs.newConversation()
    }
    Shortcut {
        sequences: ["Ctrl+W"]
        context: Qt.ApplicationShortcut
        onActivated: window.app.tabs.closeTab(window.app.tabs.currentIndex)
    }
    Shortcut {
        sequences: ["Ctrl+Tab"]
        context: Qt.ApplicationShortcut
        onActivated: window.app.tabs.nextTab()
    }
    Shortcut {
        // Qt reports Ctrl+Shift+Tab as Backtab with Ctrl+Shift or with Ctrl alone,
        // depending on the platform. On X11 (xcb) the key matches several of these
        // sequences at once, and Qt then reports the shortcut as ambiguous instead of
        // activated: both signals mean the one action.
        sequences: ["Ctrl+Shift+Tab", "Ctrl+Shift+Backtab", "Ctrl+Backtab"]
        context: Qt.ApplicationShortcut
        onActivated: window.app.tabs.previousTab()
        onActivatedAmbiguously: window.app.tabs.previousTab()
    }
    Shortcut {
        sequences: ["Esc"]
        context: Qt.ApplicationShortcut
        enabled: window.app.tabs.current !== null && window.app.tabs.current.generating
        onActivated: window.app.tabs.current.stop()
    }
    Shortcut {
        // Closing the only window quits, the way the window's close button does.
        sequences: ["Ctrl+Q"]
        context: Qt.ApplicationShortcut
        onActivated: window.close()
    }
    Shortcut {
        sequences: ["Ctrl+F"]
        context: Qt.ApplicationShortcut
        onActivated: sidebar.focusSearch()
    }
    Shortcut {
        sequences: ["F2"]
        context: Qt.ApplicationShortcut
        onActivated: sidebar.renameCurrent()
    }
    Shortcut {
        sequences: [StandardKey.Preferences, "Ctrl+,"]
        context: Qt.ApplicationShortcut
        onActivated: settingsDialog.open()
    }

    RowLayout {
        anchors.fill: parent
        spacing: 0

        Sidebar {
            id: sidebar
            objectName: "sidebar"
            app: window.app
            Layout.preferredWidth: 270
            Layout.fillHeight: true
            onSettingsRequested: settingsDialog.open()
        }

        ToolSeparator {
            orientation: Qt.Vertical
            Layout.fillHeight: true
            padding: 0
        }

        ColumnLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true
            spacing: 0

            NoticeBar {
                Layout.fillWidth: true
                text: window.app.notice
                onDismissed: window.app.dismissNotice()
            }

            ModelStatus {
                Layout.fillWidth: true
                model: window.app.model
                download: window.app.defaultModelDownload
                onSettingsRequested: settingsDialog.open()
            }

            TabStrip {
                objectName: "tabStrip"
                Layout.fillWidth: true
                tabs: window.app.tabs
                visible: window.app.tabs.count > 0
            }

            ChatView {
                objectName: "chatView"
                Layout.fillWidth: true
                Layout.fillHeight: true
                app: window.app
                session: window.app.tabs.current
            }

            StatusBar {
                objectName: "statusBar"
                Layout.fillWidth: true
                model: window.app.model
                session: window.app.tabs.current
            }
        }
    }

    UndoBar {
        anchors.horizontalCenter: parent.horizontalCenter
        anchors.bottom: parent.bottom
        anchors.bottomMargin: 40
        width: Math.min(480, parent.width - 40)
        title: window.app.pendingDeletion
        onUndo: window.app.undoDelete()
    }

    SettingsDialog {
        id: settingsDialog
        app: window.app
        anchors.centerIn: parent
    }
}
