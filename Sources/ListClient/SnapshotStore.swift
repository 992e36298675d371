import Dispatch
import Foundation
import JSON
import ListView
import ListWire
import Synchronization

/// Where a follow keeps the last state it showed (``FollowOptions/snapshotStore``), so
/// an app started offline shows it at once and then resumes from its version and epoch.
///
/// One entry per list and view. The follow loads the entry before its first request,
/// saves the state after each update it emits, and removes the entry when the list is
/// deleted. ``FileSnapshotStore`` keeps one file per entry; ``InMemorySnapshotStore``
/// is for tests and previews.
///
/// A class: a follow's writes to one store are put in order and coalesced by its
/// identity (``FollowOptions/snapshotInterval``).
///
/// Why `async throws` with untyped errors: an app may put the entries in its own
/// database (Core Data, GRDB), whose calls are asynchronous and whose errors are its own.
/// A follow never fails because of its store: a failure is reported to
/// ``FollowOptions/onSnapshotStoreFailure`` and the follow goes on as if the entry were absent.
public protocol SnapshotStore: AnyObject, Sendable {
    /// The state kept for `view` of `list`, or `nil` when there is none.
    func load(list: String, view: ViewSpec) async throws -> ListState?
    /// Keeps `state` (of list `state.id`) for `view`, replacing what was kept.
    func save(_ state: ListState, view: ViewSpec) async throws
    /// Forgets what was kept for `view` of `list` (nothing kept is not an error).
    func remove(list: String, view: ViewSpec) async throws
}

/// A snapshot store operation that failed (``FollowOptions/onSnapshotStoreFailure``).
public struct SnapshotStoreFailure: Sendable, CustomStringConvertible {
    /// What was being done.
    public enum Operation: String, Sendable {
        /// Reading the entry at the follow's start.
        case load
        /// Keeping the state after an update.
        case save
        /// Forgetting a deleted list.
        case remove
    }

    /// The list followed.
    public var list: String
    /// The view of it followed.
    public var view: ViewSpec
    /// What failed.
    public var operation: Operation
    /// The store's error.
    public var error: any Error

    /// Creates a report.
    public init(list: String, view: ViewSpec, operation: Operation, error: any Error) {
        self.list = list
        self.view = view
        self.operation = operation
        self.error = error
    }

    /// `cannot load the stored snapshot of groceries: …`
    public var description: String {
        let what = view.isWholeList ? list : "\(list)?\(view.canonicalQuery)"
        return "cannot \(operation.rawValue) the stored snapshot of \(what): \(error)"
    }
}

/// Why a ``FileSnapshotStore`` could not read or write an entry.
public struct SnapshotFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file.
    public var path: String
    /// What was wrong with it.
    public var reason: String

    /// Creates an error.
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    /// `<path>: <reason>`
    public var description: String { "\(path): \(reason)" }
}

/// A ``SnapshotStore`` with one JSON file per list and view in a folder the app names
/// (its caches or application-support folder).
///
/// A file is `{"format": 1, "list": …, "view": …, "state": <the snapshot's wire form>}`,
/// written to a temporary file in the same folder, fsynced, then renamed over the old
/// one: a reader (or an app killed mid-write) sees the old file or the new one, never
/// half of one. A file that cannot be read, does not parse, or names another list or
/// view is an error of ``load(list:view:)`` (which the follow reports and ignores; the
/// next save replaces the file). Files are named `<list>.json`, or `<list>@<hash>.json`
/// for a view (a 64-bit FNV-1a hash of its canonical query; `@` is not in any list id,
/// so no two names clash, and the view kept in the file is checked on load).
///
/// Every file operation runs on the store's own serial queue, never on Swift's
/// cooperative threads (fsync blocks), in the order asked for.
///
/// ```swift
/// let store = FileSnapshotStore(directory: caches.appending(path: "lists"))
/// var options = FollowOptions()
/// options.snapshotStore = store
/// for try await update in client.updates(list: "groceries", options: options) { apply(update) }
/// ```
public final class FileSnapshotStore: SnapshotStore {
    /// The folder the files are in; made (with its parents) at the first save.
    public let directory: URL
    private let queue: DispatchQueue

    /// A store of files in `directory`.
    public init(directory: URL) {
        self.directory = directory
        queue = DispatchQueue(label: "listd.snapshots.\(directory.lastPathComponent)")
    }

    /// The file that keeps `view` of `list`.
    public func file(list: String, view: ViewSpec) -> URL {
        let name = view.isWholeList ? list : "\(list)@\(Self.hash(view.canonicalQuery))"
        return directory.appendingPathComponent(name + ".json")
    }

    /// Reads the file of `view` of `list`: `nil` when there is none.
    public func load(list: String, view: ViewSpec) async throws -> ListState? {
        let file = file(list: list, view: view)
        return try await run { () throws(SnapshotFileError) in try Self.read(file, list: list, view: view) }
    }

    /// Writes `state` to its file atomically (temporary file, fsync, rename).
    public func save(_ state: ListState, view: ViewSpec) async throws {
        let file = file(list: state.id, view: view)
        var writer = JSONWriter(capacity: 256 + state.itemCount * 48)
        writer.beginObject()
        writer.key("format")
        writer.int64(1)
        writer.key("list")
        writer.string(state.id)
        writer.key("view")
        writer.string(view.canonicalQuery)
        writer.key("state")
        writer.snapshot(state)
        writer.endObject()
        let bytes = writer.bytes
        let directory = directory
        try await run { () throws(SnapshotFileError) in try Self.write(bytes, to: file, in: directory) }
    }

    /// Deletes the file of `view` of `list`, if there is one.
    public func remove(list: String, view: ViewSpec) async throws {
        let file = file(list: list, view: view)
        try await run { () throws(SnapshotFileError) in
            guard FileManager.default.fileExists(atPath: file.path) else { return }
            do {
                try FileManager.default.removeItem(at: file)
            } catch {
                throw SnapshotFileError(path: file.path, reason: "cannot remove: \(error)")
            }
        }
    }

    // MARK: - On the queue

    private func run<T: Sendable>(_ body: @escaping @Sendable () throws(SnapshotFileError) -> T)
        async throws(SnapshotFileError) -> T
    {
        let result: Result<T, SnapshotFileError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(SnapshotFileError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    private static func read(_ file: URL, list: String, view: ViewSpec) throws(SnapshotFileError) -> ListState? {
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try Data(contentsOf: file))
        } catch {
            throw SnapshotFileError(path: file.path, reason: "cannot read: \(error)")
        }
        let json: JSONValue
        do {
            json = try JSONValue(parsing: bytes, limits: ListClient.answerLimits)
        } catch {
            throw SnapshotFileError(path: file.path, reason: "not JSON: \(error)")
        }
        guard json["format"]?.int64Value == 1, let state = json["state"] else {
            throw SnapshotFileError(path: file.path, reason: "not a snapshot file of format 1")
        }
        guard json["list"]?.stringValue == list, json["view"]?.stringValue == view.canonicalQuery else {
            throw SnapshotFileError(path: file.path, reason: "holds another list or view")
        }
        let decoded: ListState
        do {
            decoded = try ListState(json: state)
        } catch {
            throw SnapshotFileError(path: file.path, reason: "\(error)")
        }
        guard decoded.id == list else {
            throw SnapshotFileError(path: file.path, reason: "holds list \(decoded.id), not \(list)")
        }
        return decoded
    }

    private static func write(_ bytes: [UInt8], to file: URL, in directory: URL) throws(SnapshotFileError) {
        let temporary = directory.appendingPathComponent(
            ".\(file.lastPathComponent).\(UInt64.random(in: 0 ... .max)).new")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
                throw SnapshotFileError(path: temporary.path, reason: "cannot create")
            }
            let handle = try FileHandle(forWritingTo: temporary)
            do {
                try handle.write(contentsOf: bytes)
                try handle.synchronize()
                try handle.close()
            } catch {
                try? handle.close()
                throw error
            }
            guard rename(temporary.path, file.path) == 0 else {
                throw SnapshotFileError(path: file.path, reason: "cannot rename \(temporary.path) over it")
            }
        } catch let error as SnapshotFileError {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw SnapshotFileError(path: file.path, reason: "cannot write: \(error)")
        }
    }

    /// 64-bit FNV-1a of `text`'s UTF-8, as 16 hex digits: a short, stable file name part.
    static func hash(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// A ``SnapshotStore`` in memory: for tests, previews, and an app that wants the
/// resumption without the files.
public final class InMemorySnapshotStore: SnapshotStore {
    private let entries = Mutex<[String: ListState]>([:])

    /// An empty store.
    public init() {}

    /// The state kept for `view` of `list`, if any.
    public func load(list: String, view: ViewSpec) async throws -> ListState? {
        entries.withLock { $0[Self.key(list, view)] }
    }

    /// Keeps `state` for `view`.
    public func save(_ state: ListState, view: ViewSpec) async throws {
        entries.withLock { $0[Self.key(state.id, view)] = state }
    }

    /// Forgets `view` of `list`.
    public func remove(list: String, view: ViewSpec) async throws {
        _ = entries.withLock { $0.removeValue(forKey: Self.key(list, view)) }
    }

    /// The state kept for `view` of `list`, read without waiting.
    public func state(of list: String, view: ViewSpec = .wholeList) -> ListState? {
        entries.withLock { $0[Self.key(list, view)] }
    }

    private static func key(_ list: String, _ view: ViewSpec) -> String { list + "?" + view.canonicalQuery }
}
