import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An exclusive, advisory lock on a file, held until ``release()`` or until the
/// process ends (the kernel drops it then, even on SIGKILL).
///
/// It is an `flock(2)` on a lock file of its own (`<database>-lock`), never on
/// the database file: SQLite locks the database with POSIX `fcntl` locks, which
/// a process loses on *every* descriptor of the file when it closes any one of
/// them, so a second descriptor on the database itself would be a hazard.
/// `flock` locks belong to the open file description, so a second lock on the
/// same file fails even within one process. The holder's pid is written into
/// the file, so the refusal can name it.
public final class FileLock: Sendable {
    /// The lock file.
    public let path: String
    /// The open descriptor holding the lock; `-1` once released.
    private let descriptor: Int32
    private let released: Atomic<Bool>

    /// Why a lock could not be taken.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The lock file.
        public var path: String
        /// The pid written by the process holding the lock, when it could be read.
        public var holder: Int32?
        /// `nil` when another holder has the lock; the `errno` of a failed call otherwise.
        public var errno: Int32?

        public var description: String {
            if let errno {
                return "cannot lock \(path): \(String(cString: strerror(errno)))"
            }
            let who = holder.map { "process \($0)" } ?? "another process"
            return "\(path) is locked by \(who)"
        }
    }

    /// Takes the lock on `path` (creating the file), without waiting.
    ///
    /// - Throws: ``Failure`` with `errno == nil` when another open file
    ///   description (another process, or another lock in this one) holds it.
    public init(path: String) throws(Failure) {
        self.path = path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure(path: path, holder: nil, errno: errno) }
        var result: Int32
        repeat { result = flock(fd, LOCK_EX | LOCK_NB) } while result != 0 && errno == EINTR
        if result != 0 {
            let error = errno
            let holder = FileLock.readPid(fd)
            close(fd)
            throw Failure(path: path, holder: holder, errno: error == EWOULDBLOCK ? nil : error)
        }
        // Record who holds it, for the next process's error message.
        let text = Array("\(getpid())\n".utf8)
        if ftruncate(fd, 0) == 0 {
            _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        }
        self.descriptor = fd
        self.released = Atomic(false)
    }

    deinit { release() }

    /// Releases the lock (closing the descriptor). Calling it again does nothing.
    public func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        close(descriptor)
    }

    private static func readPid(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[0..<count], as: UTF8.self)
        return Int32(text.trimmingPrefixAndSuffixWhitespace)
    }
}

extension String {
    fileprivate var trimmingPrefixAndSuffixWhitespace: Substring {
        let scalars = self.drop(while: \.isWhitespace)
        var end = scalars.endIndex
        while end > scalars.startIndex, scalars[scalars.index(before: end)].isWhitespace {
            end = scalars.index(before: end)
        }
        return scalars[scalars.startIndex..<end]
    }
}
