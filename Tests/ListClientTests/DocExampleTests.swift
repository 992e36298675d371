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
        let process = Process()
        process.executableURL = try ListdBinary.url.deletingLastPathComponent().appendingPathComponent("FollowList")
        process.arguments = [server.baseURL.absoluteString, "nope"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let output = OutputLog(pipe.fileHandleForReading)
        let status = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        await output.finished()
        #expect(status == 1, "\(output.text)")
        #expect(process.terminationReason == .exit, "\(output.text)")
        #expect(output.text.contains("FollowList: "), "\(output.text)")
        #expect(output.text.contains("404") || output.text.contains("unknown-list"), "\(output.text)")
        #expect(!output.text.contains("Fatal error"), "\(output.text)")
    }
}
