import Foundation
import Glibc
import ListdTestSupport
import Testing

/// Runs the JavaScript client's own tests (clients/js/*.test.mjs) with
/// Node's test runner, so `swift test` covers both clients and the shared
/// stage fixture. A real listd (write token set) serves the tests in
/// clients/js/live.test.mjs, which skip when run without one. Without Node
/// the test is skipped, saying why; under `CI=true` a missing Node is a failure.
@Suite struct JavaScriptClientTests {
    static let node: String? = ["/usr/bin/node", "/usr/bin/nodejs", "/usr/local/bin/node"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static let inCI = ProcessInfo.processInfo.environment["CI"] == "true"

    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    @Test(
        .enabled(
            if: node != nil || inCI,
            "node is not installed (apt-get install nodejs): the JavaScript client's tests are skipped"))
    func nodeTestsPass() async throws {
        let node = try #require(Self.node, "CI=true and node is missing: install nodejs")
        let token = "js-live-write-token"
        let server = try await ListdProcess(environment: ["LISTD_WRITE_TOKEN": token])
        defer { _ = server.stop() }
        var environment = ProcessInfo.processInfo.environment
        environment["LISTD_TEST_URL"] = server.baseURL.absoluteString
        environment["LISTD_TEST_WRITE_TOKEN"] = token
        let (process, output) = try ChildProcess.logged(
            URL(fileURLWithPath: node), ["--test", "clients/js/"], environment: environment, directory: Self.root)
        // A node test that never ends must fail this test, not hang the whole run. Alone
        // the files take about 15 s; beside the other suites on 2 cores, about 70 s.
        await output.finished(timeout: .seconds(300))
        let hung = process.isRunning
        if hung { kill(process.processIdentifier, SIGKILL) }
        _ = await process.exited()
        #expect(!hung, "node --test clients/js/ still ran after 300 s and was killed:\n\(output.text.suffix(4000))")
        #expect(process.terminationStatus == 0, "node --test clients/js/ failed:\n\(output.text.suffix(4000))")
        #expect(output.text.contains("# fail 0"), "\(output.text.suffix(2000))")
        #expect(output.text.contains("# skipped 0"), "the live tests ran against the listd started here")
    }
}
