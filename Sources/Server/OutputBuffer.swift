import CSystem
import DequeModule
import Glibc

/// Bytes queued for one socket, written with vectored writes.
///
/// Why a queue of arrays: a response's head and body are queued as they are
/// (the body array is shared, not copied) and go out together in one
/// `sendmsg`; a partial write only advances an offset into the first array.
/// The loop stops reading and parsing a connection while `pendingBytes` is
/// above its high-water mark, so a client that does not read cannot make
/// the server buffer without bound.
struct OutputBuffer {
    /// Most arrays passed to one vectored write.
    static let maximumVectors = 16

    private var chunks: Deque<[UInt8]> = []
    /// Bytes of `chunks.first` already written.
    private var firstOffset = 0
    /// Bytes queued and not yet written.
    private(set) var pendingBytes = 0

    var isEmpty: Bool { pendingBytes == 0 }

    /// Queues `bytes` (nothing for an empty array).
    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        chunks.append(bytes)
        pendingBytes += bytes.count
    }

    /// Marks `count` bytes as written, dropping arrays that are done.
    mutating func consume(_ count: Int) {
        precondition(count <= pendingBytes, "consumed more than was queued")
        pendingBytes -= count
        var remaining = count
        while remaining > 0, let first = chunks.first {
            let left = first.count - firstOffset
            if remaining >= left {
                remaining -= left
                chunks.removeFirst()
                firstOffset = 0
            } else {
                firstOffset += remaining
                remaining = 0
            }
        }
        if pendingBytes == 0 {
            // Give the deque's storage back: an idle or parked connection keeps nothing.
            chunks = []
            firstOffset = 0
        }
    }

    /// Calls `body` with iovecs for up to `maximumVectors` queued arrays.
    ///
    /// The pointers are valid only inside `body`: each array is pinned by a
    /// nested `withUnsafeBytes`, hence the recursion (depth ≤ `maximumVectors`).
    func withVectors<R>(_ body: (UnsafeMutableBufferPointer<iovec>) -> R) -> R {
        let count = min(chunks.count, Self.maximumVectors)
        return withUnsafeTemporaryAllocation(of: iovec.self, capacity: max(count, 1)) { vectors in
            pin(index: 0, count: count, vectors: vectors, body)
        }
    }

    private func pin<R>(
        index: Int, count: Int, vectors: UnsafeMutableBufferPointer<iovec>,
        _ body: (UnsafeMutableBufferPointer<iovec>) -> R
    ) -> R {
        if index == count {
            return body(UnsafeMutableBufferPointer(rebasing: vectors[0..<count]))
        }
        let chunk = chunks[index]
        return chunk.withUnsafeBytes { raw -> R in
            let skip = index == 0 ? firstOffset : 0
            vectors[index] = iovec(
                iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress.map { $0 + skip }),
                iov_len: raw.count - skip)
            return pin(index: index + 1, count: count, vectors: vectors, body)
        }
    }
}

@available(*, unavailable)
extension OutputBuffer: Sendable {}
