import Foundation
import ListdTestSupport
import Testing
import Tokens

/// The minters docs/tokens.md shows (Node and Python) are run as written, and what they print
/// must verify: the docs cannot drift from what listd accepts. Skipped, saying why, when Node or
/// Python is not installed; under `CI=true` that is a failure.
@Suite struct TokenDocsTests {
    static let inCI = ProcessInfo.processInfo.environment["CI"] == "true"
    static let node = executable(["/usr/bin/node", "/usr/bin/nodejs", "/usr/local/bin/node"])
    static let python = executable(["/usr/bin/python3", "/usr/local/bin/python3"])

    static var docs: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/tokens.md")
    }

    @Test(.enabled(if: node != nil || inCI, "node is not installed: the Node minters in docs/tokens.md are not run"))
    func theNodeMintersMakeTokensListdAccepts() async throws {
        let node = try #require(Self.node, "CI=true and node is missing")
        let blocks = try Self.codeBlocks("js")
        #expect(blocks.count == 2)
        for block in blocks {
            try await Self.check(block, algorithm: block.contains("\"EdDSA\"") ? .eddsa : .hs256, run: node)
        }
    }

    @Test(
        .enabled(if: python != nil || inCI, "python3 is not installed: the Python minter in docs/tokens.md is not run"))
    func thePythonMinterMakesTokensListdAccepts() async throws {
        let python = try #require(Self.python, "CI=true and python3 is missing")
        let blocks = try Self.codeBlocks("python")
        #expect(blocks.count == 1)
        for block in blocks { try await Self.check(block, algorithm: .hs256, run: python) }
    }

    /// Runs `program` with `interpreter` in a folder holding a fresh `token.key`, and verifies what it prints.
    static func check(_ program: String, algorithm: TokenAlgorithm, run interpreter: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("listd-docs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try TokenKey.generate(algorithm)
        try Data(files.keyFile).write(to: directory.appendingPathComponent("token.key"))
        let script = directory.appendingPathComponent(interpreter.hasSuffix("python3") ? "mint.py" : "mint.js")
        try Data(program.utf8).write(to: script)

        let (process, output) = try ChildProcess.logged(
            URL(fileURLWithPath: interpreter), [script.path], environment: ProcessInfo.processInfo.environment,
            directory: directory)
        await output.finished(timeout: .seconds(60))
        _ = await process.exited()
        #expect(process.terminationStatus == 0, "\(output.text)")

        let token = output.text.trimmingCharacters(in: .whitespacesAndNewlines)
        let key = try await TokenKey(contents: files.publicKeyFile ?? files.keyFile)
        let claims = try TokenVerifier(key: key).verify(token, now: Date()).get()
        #expect(claims.subject == "u42")
        #expect(claims.lists.map(\.description) == ["u42-*"])
        #expect(claims.expires > Date())
    }

    /// The fenced blocks of `language` in docs/tokens.md, in order.
    static func codeBlocks(_ language: String) throws -> [String] {
        let text = try String(contentsOf: docs, encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if let lines = current {
                if line == "```" {
                    blocks.append(lines.joined(separator: "\n") + "\n")
                    current = nil
                } else {
                    current = lines + [line]
                }
            } else if line == "```\(language)" {
                current = []
            }
        }
        return blocks
    }

    static func executable(_ candidates: [String]) -> String? {
        candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
