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
    // Teal, dark enough in the light theme (700) for 4.5:1 as text on white and under
    // white text; Material's own light shade (200) in the dark theme.
    Material.accent: Material.theme === Material.Dark ? Material.color(Material.Teal, Material.Shade200)
                                                      : Material.color(Material.Teal, Material.Shade700)
    // For what draws with the palette rather than Material's colours: links and selected
    // text in messages.
    palette.link: Theme.link(Material.theme === Material.Dark)
    palette.highlight: Material.accentColor
    palette.highlightedText: Material.theme === Material.Dark ? "#000000" : "#ffffff"
    // Every control takes the body size of the type scale, in mixed case (Material's
    // buttons are otherwise all capitals).
    font.pixelSize: Theme.bodySize
    font.capitalization: Font.MixedCase

    // Under Theme.compactWidth the sidebar is hidden, and floats over the chat when asked
    // for; a wider window shows it docked unless the user hid it.
    readonly property bool compact: width < Theme.compactWidth
    property bool sidebarDocked: true
    property bool sidebarFloating: false
    readonly property bool sidebarShown: compact ? sidebarFloating : sidebarDocked
    function toggleSidebar() {
        if (compact) sidebarFloating = !sidebarFloating
        else sidebarDocked = !sidebarDocked
    }
    onCompactChanged: sidebarFloating = false

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
        onActivated: {
            if (!window.sidebarShown) window.toggleSidebar()
            sidebar.focusSearch()
        }
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

        // The sidebar's place in the row: its width while it is docked, none while it
        // floats over the chat (a compact window).
        Item {
            z: 2
            Layout.preferredWidth: window.sidebarShown && !window.compact ? Theme.sidebarWidth : 0
            Layout.fillHeight: true

            Sidebar {
                id: sidebar
                objectName: "sidebar"
                app: window.app
                width: Theme.sidebarWidth
                height: parent.height
                visible: window.sidebarShown
                // A shadow while it floats (none under the software renderer, which
                // cannot draw Material's shadow and would drop the sidebar's background).
                Material.elevation: window.compact && GraphicsInfo.api !== GraphicsInfo.Software ? 8 : 0
                onSettingsRequested: settingsDialog.open()
                onConversationChosen: if (window.compact) window.sidebarFloating = false
            }
            // Over the chat while the sidebar floats: a click beside the sidebar closes it.
            MouseArea {
                objectName: "sidebarScrim"
                x: Theme.sidebarWidth
                width: window.width - x
                height: parent.height
                visible: window.compact && window.sidebarShown
                onClicked: window.sidebarFloating = false
                Rectangle {
                    anchors.fill: parent
                    color: "#000000"
                    opacity: 0.32
                }
            }
        }

        ToolSeparator {
            visible: window.sidebarShown && !window.compact
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

            // The model in use, to switch from (the picker), and its state; the first-start
            // offer (a sentence and three buttons) gets a row of its own below the picker.
            GridLayout {
                Layout.fillWidth: true
                columns: modelStatus.offerDownload ? 1 : 2
                rowSpacing: 0
                columnSpacing: 0
                ModelPickerButton {
                    app: window.app
                    Layout.leftMargin: 4
                    Layout.maximumWidth: Math.max(180, window.width * 0.45)
                    onLibraryRequested: libraryDialog.open()
                }
                ModelStatus {
                    id: modelStatus
                    Layout.fillWidth: true
                    model: window.app.model
                    download: window.app.defaultModelDownload
                    remote: window.app.picker.currentRemote
                    onSettingsRequested: settingsDialog.open()
                    onLibraryRequested: firstStartLibrary.active = true
                }
            }
            NoticeBar {
                objectName: "modelPickerError"
                Layout.fillWidth: true
                text: window.app.picker.error
                onDismissed: window.app.picker.dismissError()
            }
            // What the loaded model's file gets wrong (its chat template could not be
            // used, ...): shown once per load, until dismissed.
            NoticeBar {
                objectName: "modelWarning"
                Layout.fillWidth: true
                text: window.app.model.warning
                onDismissed: window.app.model.dismissWarning()
            }

            // The sidebar switch, the open conversations, new conversation and the
            // current one's settings.
            RowLayout {
                Layout.fillWidth: true
                spacing: 0
                IconButton {
                    objectName: "sidebarToggle"
                    text: window.sidebarShown ? qsTr("Hide the sidebar") : qsTr("Show the sidebar")
                    iconName: "sidebar"
                    checked: window.sidebarShown
                    onClicked: window.toggleSidebar()
                }
                TabStrip {
                    objectName: "tabStrip"
                    Layout.fillWidth: true
                    tabs: window.app.tabs
                    visible: window.app.tabs.count > 0
                }
                Item {
                    Layout.fillWidth: true
                    visible: window.app.tabs.count === 0
                }
                IconButton {
                    objectName: "newTabButton"
                    text: qsTr("New conversation (Ctrl+N)")
                    iconName: "plus"
                    onClicked: window.app.tabs.newConversation()
                }
                IconButton {
                    objectName: "conversationSettingsButton"
                    text: qsTr("Conversation settings")
                    iconName: "tune"
                    enabled: window.app.tabs.current !== null
                    onClicked: chatView.openConversationSettings()
                }
            }

            ChatView {
                id: chatView
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

    // The library with its catalogue, offered beside the default model while that is
    // missing; made when asked for, so the settings' own library dialog stays the one.
    Loader {
        id: firstStartLibrary
        active: false
        sourceComponent: ModelLibraryDialog {
            objectName: "firstStartLibraryDialog"
            app: window.app
            onClosed: firstStartLibrary.active = false
        }
        onLoaded: item.open()
    }

    SettingsDialog {
        id: settingsDialog
        app: window.app
        anchors.centerIn: parent
    }

    ModelLibraryDialog {
        id: libraryDialog
        objectName: "headerModelLibraryDialog"
        app: window.app
    }

    ModelPickerPrompt {
        picker: window.app.picker
        model: window.app.model
    }
}
