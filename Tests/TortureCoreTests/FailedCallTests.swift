import Testing

@testable import TortureCore

/// A write with no answer counts as maybe applied unless its connect failed.
@Suite struct FailedCallTests {
    @Test(arguments: [
        "connect", "connect (no address)", "connect (cancelled)", "getaddrinfo (Name or service not known)",
    ])
    func aFailedConnectNeverReachedTheServer(_ call: String) {
        #expect(!FailedCall.mayHaveReachedServer(call))
    }

    /// The second one is what the harness once read as a failed connect: an
    /// unkeyed DELETE whose answer a kill lost, its retry then answered 404
    /// and reported as a lost acknowledged item (SQLite, seed 28, t+688 s).
    @Test(arguments: [
        "read (connection closed before a response)",
        "read (connection closed before a response) (a reused connection failed; DELETE not retried)",
        "read (timed out)", "send", "read (connection closed mid-body)",
    ])
    func anythingAfterTheConnectMayHaveBeenApplied(_ call: String) {
        #expect(FailedCall.mayHaveReachedServer(call))
    }
}
