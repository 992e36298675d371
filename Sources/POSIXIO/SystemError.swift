import CSystem
import Glibc

/// A failed system call: which call, and the errno it left.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The name of the call that failed, for example `bind`.
    public let call: String
    /// The errno value the call left.
    public let errno: Int32

    /// Creates an error for `call` from an errno value.
    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
