// A child process for ListStoreTests' crash test: writes to a store under load
// and prints each acknowledged write, so the parent can SIGKILL it mid-stream
// and check that every printed write survived.
//
// Usage: StoreCrashWriter <database path, or postgres:// URL> <migrations folder> [idempotent]
// With `idempotent`, each write carries an IdempotencyClaim keyed by its item's id,
// whose answer (the version written) the store keeps with the commit.
import Foundation
import ListModel
import ListStore
import PostgresStore

let arguments = CommandLine.arguments
guard arguments.count == 3 || (arguments.count == 4 && arguments[3] == "idempotent") else {
    FileHandle.standardError.write(Data("usage: StoreCrashWriter <database> <migrations> [idempotent]\n".utf8))
    exit(2)
}
let idempotent = arguments.count == 4
let configuration = StoreConfiguration(migrationsDirectory: URL(fileURLWithPath: arguments[2]), fullSync: true)
let list = Identifier("crash")
let section = Identifier("s")

/// Writes a line to stdout at once: the parent reads it as an acknowledgement.
func acknowledge(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let store: any Store
do {
    if arguments[1].hasPrefix("postgres://") || arguments[1].hasPrefix("postgresql://") {
        store = try await PostgresStore(url: arguments[1], configuration: configuration)
    } else {
        store = try await SQLiteStore(path: arguments[1], configuration: configuration)
    }
    _ = try await store.createList(id: list, name: "crash", sections: [NewSection(id: section)])
} catch {
    FileHandle.standardError.write(Data("StoreCrashWriter: \(error)\n".utf8))
    exit(1)
}
acknowledge("ready")
await withTaskGroup(of: Void.self) { group in
    for writer in 0..<16 {
        group.addTask {
            var count = 0
            while true {
                let item = "w\(writer)-\(count)"
                count += 1
                guard let id = Identifier(item) else { return }
                do {
                    let claim = idempotent ? IdempotencyClaim(caller: "crash", key: item, fingerprint: item) : nil
                    claim?.answer.render { (result: WriteResult) in
                        StoredAnswer(status: 200, headers: [], body: Array("\(item) v\(result.version)".utf8))
                    }
                    _ = try await IdempotencyClaim.$current.withValue(claim) {
                        try await store.apply(
                            [.insertItem(section: section, item: NewItem(id: id), at: count % 3 == 0 ? 0 : nil)],
                            to: list, expectedVersion: nil)
                    }
                    acknowledge(item)
                } catch {
                    FileHandle.standardError.write(Data("StoreCrashWriter: \(error)\n".utf8))
                    return
                }
            }
        }
    }
}
