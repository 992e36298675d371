import Foundation
import ListdTestSupport
import Testing

/// The Swift blocks of README.md ("Following a list from Swift") that say they come from the
/// example target must match it verbatim, so the doc's code is the code `swift build` compiles.
@Suite struct DocExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func docBlocksAreCopiedFromTheCompiledExample() throws {
        let doc = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let example = try String(
            contentsOf: Self.root.appendingPathComponent("Examples/FollowList/main.swift"), encoding: .utf8)
        let marker = "<!-- Examples/FollowList/main.swift -->\n```swift\n"
        let blocks = doc.components(separatedBy: marker).dropFirst().compactMap {
            $0.components(separatedBy: "\n```").first
        }
        #expect(blocks.count == 2)
        for block in blocks {
            #expect(example.contains(block), "doc block not in the example:\n\(block.prefix(200))")
        }
    }
}

/// The example run as its README line says, against a list that does not exist: it prints the
/// error and exits 1, with no trap or backtrace.
@Suite struct FollowListExampleTests {
    @Test func anErrorIsPrintedAndExitsOne() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let (process, output) = try ChildProcess.logged(
            try ListdBinary.url.deletingLastPathComponent().appendingPathComponent("FollowList"),
            [server.baseURL.absoluteString, "nope"], environment: ProcessInfo.processInfo.environment)
        let status = await process.exited()
        await output.finished()
        #expect(status == 1, "\(output.text)")
        #expect(!process.wasSignaled, "\(output.text)")
        #expect(output.text.contains("FollowList: "), "\(output.text)")
        #expect(output.text.contains("404") || output.text.contains("unknown-list"), "\(output.text)")
        #expect(!output.text.contains("Fatal error"), "\(output.text)")
    }
}
