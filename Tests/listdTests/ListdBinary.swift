import Foundation

/// Finds the `listd` executable that `swift build` put beside this test bundle.
enum ListdBinary {
    static var url: URL {
        get throws {
            let executable = URL(
                fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            var directory = executable.deletingLastPathComponent()
            // On Linux the test bundle is `<build dir>/listdPackageTests.xctest`.
            for _ in 0..<3 {
                let candidate = directory.appendingPathComponent("listd")
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
                directory = directory.deletingLastPathComponent()
            }
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "listd next to \(executable.path)"])
        }
    }

    /// Runs `listd` with `arguments` and returns its exit status and standard
    /// output (and standard error too, when `stderr`).
    static func run(_ arguments: [String], stderr: Bool = false) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = try url
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LISTD_") }
        let pipe = Pipe()
        process.standardOutput = pipe
        if stderr { process.standardError = pipe }
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
