import ArgumentParser
import Storage

/// `listd version`: prints the version of listd and of the SQLite it runs on.
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "Print the version of listd and of its SQLite library."
    )

    /// The release of listd this binary was built from.
    static let listdVersion = "0.1.0"

    func run() {
        print("listd \(Self.listdVersion) (SQLite \(SQLiteLibrary.version))")
    }
}
