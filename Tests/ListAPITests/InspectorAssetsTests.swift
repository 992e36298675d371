import Foundation
import Testing

@testable import ListAPI

/// The inspector's files are compiled in (Sources/ListAPI/Inspector/InspectorAssets.swift,
/// written by ui/embed.py); this fails when the generated file and the files drift apart.
@Suite struct InspectorAssetsTests {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    @Test func embeddedFilesMatchTheirSources() throws {
        #expect(Set(InspectorAssets.files.keys) == ["index.html", "inspector.css", "inspector.js", "listd.js"])
        for (name, file) in InspectorAssets.files.sorted(by: { $0.key < $1.key }) {
            let source = try String(contentsOf: Self.root.appendingPathComponent(file.source), encoding: .utf8)
            #expect(
                file.text == source,
                "\(name) differs from \(file.source): run `python3 ui/embed.py` and commit the result")
        }
    }

    @Test func thePageLoadsOnlyItsOwnFiles() throws {
        let page = try #require(InspectorAssets.files["index.html"]).text
        for reference in ["/ui/inspector.css", "/ui/inspector.js"] { #expect(page.contains("\"\(reference)\"")) }
        for file in InspectorAssets.files.values {
            #expect(!file.text.contains("https://"), "\(file.source) must not fetch anything from outside")
        }
    }
}
