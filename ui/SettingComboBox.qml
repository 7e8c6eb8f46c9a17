import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// A choice box of a settings page. It asks its layout for the width of its widest choice
// from the start: Material's box counts its drop indicator in its padding only while the
// box is shown, and a layout on a page not shown yet keeps the narrower width it gave
// first (Qt 6.4), which cut the text the first time the page was shown. Given less room
// than its text needs (a long choice, a narrow window), the text wraps, up to three lines,
// then ends in an ellipsis.
ComboBox {
    id: box

    // The widest choice's text in this box's font; read again when the choices change
    // (the devices found, the presets saved).
    readonly property real widestChoiceWidth: {
        void box.model;
        let widest = 0;
        for (let i = 0; i < count; ++i)
            widest = Math.max(widest, metrics.advanceWidth(textAt(i)));
        return Math.ceil(widest);
    }

    // From the style's own sizes, which are there before the box is shown.
    Layout.preferredWidth: widestChoiceWidth + shown.leftPadding + shown.rightPadding + 2 * padding + spacing
                           + (indicator ? indicator.width : 0)

    contentItem: Label {
        id: shown
        objectName: "choiceText"
        // Where Material's own text field puts the text; clear of the background's
        // rounded edge above and below when it wraps.
        leftPadding: box.mirrored ? 0 : 12
        rightPadding: box.mirrored ? 12 : 0
        topPadding: 10
        bottomPadding: 10
        text: box.displayText
        font: box.font
        wrapMode: Text.Wrap
        maximumLineCount: 3
        elide: Text.ElideRight
        verticalAlignment: Text.AlignVCenter
    }

    FontMetrics {
        id: metrics
        font: box.font
    }
}
