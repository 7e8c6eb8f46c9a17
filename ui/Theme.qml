pragma Singleton
import QtQuick

// The colours the views draw with besides Material's own foreground and background, one
// per theme (`dark`: Material.theme === Material.Dark). Every text colour here, and
// Material's foreground on every surface here, has at least 4.5:1 contrast (WCAG AA);
// test_theme_contrast measures it on the rendered window.
QtObject {
    function userBubble(dark) { return dark ? "#2b4744" : "#dcedea" }
    function codeBackground(dark) { return dark ? "#262626" : "#f0f0f0" }
    function outline(dark) { return dark ? "#5c5c5c" : "#d0d0d0" }
    function errorText(dark) { return dark ? "#ffb4a9" : "#b3261e" }
    function link(dark) { return dark ? "#80cbc4" : "#00695c" }
}
