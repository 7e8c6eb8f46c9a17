pragma Singleton
import QtQuick

// The colours the views draw with besides Material's own foreground and background, one
// per theme (`dark`: Material.theme === Material.Dark), and the one type scale and the
// sizes of the layout. Every text colour here, and Material's foreground on every surface
// here, has at least 4.5:1 contrast (WCAG AA); test_theme_contrast measures it on the
// rendered window.
QtObject {
    function userBubble(dark) { return dark ? "#2b4744" : "#dcedea" }
    function codeBackground(dark) { return dark ? "#262626" : "#f0f0f0" }
    function outline(dark) { return dark ? "#5c5c5c" : "#d0d0d0" }
    function errorText(dark) { return dark ? "#ffb4a9" : "#b3261e" }
    function link(dark) { return dark ? "#80cbc4" : "#00695c" }
    // Secondary text (placeholders, captions, the text of disabled controls): Material's
    // own hint colour is 38% (light) or 30% (dark) of the foreground, under 3:1.
    function secondaryText(dark) { return dark ? "#bdbdbd" : "#616161" }

    // The type scale, in pixels: every text takes one of these. Message text and the
    // composer's are both `body`.
    readonly property int captionSize: 12
    readonly property int bodySize: 15
    readonly property int codeSize: 14
    readonly property int titleSize: 18
    readonly property int headlineSize: 22

    readonly property int iconSize: 20
    readonly property int sidebarWidth: 270
    // Under this window width the sidebar gives its room to the chat: it is hidden, and
    // shown over the chat when asked for.
    readonly property int compactWidth: 900
    // Messages and the composer keep to a centred column this wide at most.
    readonly property int readingWidth: 800
    // The label column of every settings page, so their controls line up.
    readonly property int settingsLabelWidth: 170
}
