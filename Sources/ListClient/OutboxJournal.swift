import Dispatch
import Foundation
import JSON

/// A ``WriteOutbox``'s file: JSON lines, one `{"id", "key", "method", "path",
/// "body", "ifMatch"?}` per queued write and one `{"done": id}` per write that
/// left the queue.
///
/// Why this shape: queuing a write costs one appended line and one fsync, and
/// finishing one costs one appended line with no fsync (a `done` line lost in a
/// crash only makes the write go again after the restart, with its key, and the
/// server answers it from its record). Opening the file rewrites it with only the
/// writes still queued (a new file, fsynced, renamed over the old one), which
/// also drops a line half-written by a crash; the file is emptied whenever the
/// queue drains.
///
/// Every file operation runs on the journal's own serial queue, never on Swift's
/// cooperative threads (fsync blocks), in the order it was asked for.
final class OutboxJournal: @unchecked Sendable {
    // The handle is touched only on `queue`, which serializes every use: that is what makes this Sendable.
    private var handle: FileHandle?
    let file: URL
    private let queue: DispatchQueue

    private init(file: URL) {
        self.file = file
        queue = DispatchQueue(label: "listd.outbox.\(file.lastPathComponent)")
    }

    /// Opens `file` (created when missing), returns the writes still queued in
    /// order, and leaves the file holding only those.
    static func open(_ file: URL) async throws(ListClientError) -> (OutboxJournal, [PendingWrite]) {
        let journal = OutboxJournal(file: file)
        let pending = try await journal.run { () throws(ListClientError) in try journal.recover() }
        return (journal, pending)
    }

    /// Appends `write` and fsyncs: when this returns, the write survives a crash.
    func append(_ write: PendingWrite) async throws(ListClientError) {
        let line = Self.line(write)
        try await run { () throws(ListClientError) in try self.appendLine(line, sync: true) }
    }

    /// Queues `line` on the file's queue now, in the caller's order, and reports
    /// the result to `completion` on that queue.
    func append(_ write: PendingWrite, completion: @escaping @Sendable (ListClientError?) -> Void) {
        let line = Self.line(write)
        queue.async {
            do throws(ListClientError) {
                try self.appendLine(line, sync: true)
                completion(nil)
            } catch {
                completion(error)
            }
        }
    }

    /// Records that write `id` left the queue (no fsync, see the type's comment).
    func markDone(_ id: UInt64, emptied: Bool) {
        var writer = JSONWriter(capacity: 24)
        writer.beginObject()
        writer.key("done")
        writer.string(String(id))
        writer.endObject()
        let line = writer.bytes + [UInt8(ascii: "\n")]
        queue.async {
            // A failure here is harmless (the write goes again with its key after a restart).
            if emptied {
                try? self.handle?.truncate(atOffset: 0)
            } else {
                try? self.appendLine(line, sync: false)
            }
        }
    }

    /// Closes the file once the operations asked for so far are done.
    func close() {
        queue.async {
            try? self.handle?.close()
            self.handle = nil
        }
    }

    // MARK: - On the queue

    private func run<T: Sendable>(_ body: @escaping @Sendable () throws(ListClientError) -> T)
        async throws(ListClientError) -> T
    {
        let result: Result<T, ListClientError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(ListClientError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    private func appendLine(_ line: [UInt8], sync: Bool) throws(ListClientError) {
        guard let handle else { throw Self.failure("append to", file, "the outbox is closed") }
        do {
            try handle.seekToEnd()
            try handle.write(contentsOf: line)
            if sync { try handle.synchronize() }
        } catch {
            throw Self.failure("append to", file, error)
        }
    }

    private func recover() throws(ListClientError) -> [PendingWrite] {
        let data: Data
        do {
            data = FileManager.default.fileExists(atPath: file.path) ? try Data(contentsOf: file) : Data()
        } catch {
            throw Self.failure("read", file, error)
        }
        var writes: [UInt64: PendingWrite] = [:]
        var done = Set<UInt64>()
        for line in data.split(separator: UInt8(ascii: "\n")) {
            // A line that does not parse is the tail a crash cut short: its write never returned.
            guard let value = try? JSONValue(parsing: line) else { continue }
            if let id = value["done"]?.stringValue.flatMap(UInt64.init) {
                done.insert(id)
            } else if let write = Self.write(value) {
                writes[write.id] = write
            }
        }
        let pending = writes.values.filter { !done.contains($0.id) }.sorted { $0.id < $1.id }
        // Rewrite with only what is pending: a new file, fsynced, renamed over the old one.
        let temporary = file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent).new")
        var bytes: [UInt8] = []
        for write in pending { bytes += Self.line(write) }
        do {
            guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary.path])
            }
            let fresh = try FileHandle(forWritingTo: temporary)
            try fresh.write(contentsOf: bytes)
            try fresh.synchronize()
            try fresh.close()
            if rename(temporary.path, file.path) != 0 {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path])
            }
            // The rename itself is durable once the folder is synced.
            if let folder = try? FileHandle(forReadingFrom: file.deletingLastPathComponent()) {
                try? folder.synchronize()
                try? folder.close()
            }
            handle = try FileHandle(forUpdating: file)
        } catch {
            throw Self.failure("rewrite", file, error)
        }
        return pending
    }

    // MARK: - Lines

    static func line(_ write: PendingWrite) -> [UInt8] {
        var writer = JSONWriter(capacity: 128 + (write.request.body?.count ?? 0) * 4 / 3)
        writer.beginObject()
        // Ids as text: a JSON number reader need not hold 64 bits.
        writer.key("id")
        writer.string(String(write.id))
        writer.key("key")
        writer.string(write.key)
        writer.key("method")
        writer.string(write.request.method)
        writer.key("path")
        writer.beginArray()
        for segment in write.request.path { writer.string(segment) }
        writer.endArray()
        if let body = write.request.body {
            // Base64: the exact bytes come back, whatever they are.
            writer.key("body")
            writer.string(Data(body).base64EncodedString())
        }
        if let ifMatch = write.request.ifMatch {
            writer.key("ifMatch")
            writer.int64(ifMatch)
        }
        writer.endObject()
        return writer.bytes + [UInt8(ascii: "\n")]
    }

    static func write(_ value: JSONValue) -> PendingWrite? {
        guard let id = value["id"]?.stringValue.flatMap(UInt64.init), let key = value["key"]?.stringValue,
            let method = value["method"]?.stringValue, let segments = value["path"]?.arrayValue
        else { return nil }
        let path = segments.compactMap(\.stringValue)
        guard path.count == segments.count else { return nil }
        var body: [UInt8]?
        if let text = value["body"]?.stringValue {
            guard let data = Data(base64Encoded: text) else { return nil }
            body = [UInt8](data)
        }
        let request = WriteRequest(method: method, path: path, body: body, ifMatch: value["ifMatch"]?.int64Value)
        return PendingWrite(id: id, key: key, request: request)
    }

    private static func failure(_ action: String, _ file: URL, _ error: Any) -> ListClientError {
        ListClientError(kind: .outbox, detail: "cannot \(action) \(file.path): \(error)")
    }
}
