import QtQuick
import QtTest
import Arbor.Ui

TestCase {
    id: test
    name: "Composer"
    when: windowShown
    visible: true  // TestCase hides itself by default; hidden items get no clicks
    width: 600
    height: 200

    Component {
        id: composerComponent
        Composer { width: 500 }
    }
    SignalSpy { id: sendSpy; signalName: "sendRequested" }
    SignalSpy { id: stopSpy; signalName: "stopRequested" }

    function findByName(item, name) {
        if (item.objectName === name) return item
        for (let i = 0; i < item.children.length; ++i) {
            const found = findByName(item.children[i], name)
            if (found) return found
        }
        return null
    }

    function makeComposer() {
        const composer = createTemporaryObject(composerComponent, test)
        sendSpy.clear(); stopSpy.clear()
        sendSpy.target = composer
        stopSpy.target = composer
        composer.focusInput()
        return composer
    }

    function type(text) {
        for (const c of text) keyClick(c)
    }

    function test_enterSends() {
        const composer = makeComposer()
        type("hi there")
        keyClick(Qt.Key_Return)
        compare(sendSpy.count, 1)
        compare(sendSpy.signalArguments[0][0], "hi there")
    }

    function test_shiftEnterInsertsNewline() {
        const composer = makeComposer()
        type("one")
        keyClick(Qt.Key_Return, Qt.ShiftModifier)
        type("two")
        compare(sendSpy.count, 0)
        compare(composer.text, "one\ntwo")
        keyClick(Qt.Key_Enter)
        compare(sendSpy.count, 1)
        compare(sendSpy.signalArguments[0][0], "one\ntwo")
    }

    function test_emptyOrNotReadyDoesNotSend() {
        let composer = makeComposer()
        type("   ")
        keyClick(Qt.Key_Return)
        compare(sendSpy.count, 0)
        composer.ready = false
        type("hello")
        keyClick(Qt.Key_Return)
        compare(sendSpy.count, 0)
        verify(!findByName(composer, "sendButton").enabled)
    }

    function test_buttonStopsWhileGenerating() {
        const composer = makeComposer()
        composer.generating = true
        const button = findByName(composer, "sendButton")
        compare(button.text, "Stop")
        compare(button.Accessible.name, "Stop generating")
        type("more")
        keyClick(Qt.Key_Return)
        compare(sendSpy.count, 0)  // no second message while a reply is generated
        mouseClick(button)
        compare(stopSpy.count, 1)
        composer.generating = false
        compare(button.text, "Send")
        mouseClick(button)
        compare(sendSpy.count, 1)
    }
}
