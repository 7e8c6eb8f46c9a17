import QtQuick
import QtTest
import Arbor.Ui

TestCase {
    id: test
    name: "ApiSettings"
    when: windowShown
    visible: true  // TestCase hides itself by default; hidden items get no clicks
    width: 600
    height: 500

    Component {
        id: pageComponent
        ApiSettings { width: 550; api: testApp.api }
    }

    function collect(item, pred, out) {
        if (pred(item)) out.push(item)
        for (let i = 0; i < item.children.length; ++i) collect(item.children[i], pred, out)
        return out
    }
    function withText(item, text) { return collect(item, i => i.visible && i.text === text, []) }

    function initTestCase() {
        tryVerify(() => testApp.started && testApp.model.ready, 60000)
    }

    function test_switchStartsServerAndShowsUrl() {
        const page = createTemporaryObject(pageComponent, test)
        compare(testApp.api.enabled, false)  // off by default
        compare(collect(page, i => i.visible && String(i.text).startsWith("Not listening"), []).length, 1)
        const port = 20000 + Math.floor(Math.random() * 20000)
        testApp.api.port = port
        const toggle = withText(page, "Local API server")[0]
        verify(toggle)
        mouseClick(toggle)
        compare(testApp.api.enabled, true)
        tryVerify(() => testApp.api.listening, 10000)
        const url = "http://127.0.0.1:" + port + "/v1"
        compare(testApp.api.url, url)
        compare(withText(page, "Listening at").length, 1)
        compare(withText(page, url).length, 1)

        // Another interface only with a visible warning.
        const warning = "Other machines on the network can reach the server. Use 127.0.0.1 to keep it on this computer."
        compare(withText(page, warning).length, 0)
        testApp.api.host = "0.0.0.0"
        tryCompare(testApp.api, "exposed", true)
        compare(withText(page, warning).length, 1)
        testApp.api.host = "127.0.0.1"
        tryVerify(() => testApp.api.listening, 10000)

        mouseClick(toggle)
        compare(testApp.api.enabled, false)
        tryVerify(() => !testApp.api.listening, 10000)
        compare(withText(page, url).length, 0)
    }

    // The allowed host names and the cache sharing are fields of the page that set the
    // controller's settings; sharing shows its warning while it is on.
    function test_allowedHostsAndCacheSharing() {
        const page = createTemporaryObject(pageComponent, test)
        const hosts = collect(page, i => i.visible && i.Accessible.name === "Host names answered besides localhost, comma-separated", [])[0]
        verify(hosts)
        hosts.forceActiveFocus()
        hosts.selectAll()
        keyClick(Qt.Key_Delete)
        for (const c of "arbor.test")
            keyClick(c)
        keyClick(Qt.Key_Return)
        compare(testApp.api.allowedHosts, "arbor.test")

        const warning = "Clients can then learn from response times and cached-token counts what other clients and your conversations sent."
        compare(testApp.api.shareCache, false)
        compare(withText(page, warning).length, 0)
        const share = withText(page, "Share the cache between API clients")[0]
        verify(share)
        mouseClick(share)
        compare(testApp.api.shareCache, true)
        compare(withText(page, warning).length, 1)
        mouseClick(share)
        compare(testApp.api.shareCache, false)
        testApp.api.allowedHosts = ""
    }
}
