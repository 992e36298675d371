import Glibc
import POSIXIO
import Testing

@Suite struct SystemErrorTests {
    @Test func namesTheCallAndTheReason() {
        let error = SystemError(call: "bind", errno: EADDRINUSE)
        #expect(error.description.hasPrefix("bind failed: "))
        #expect(error.description.contains("errno \(EADDRINUSE)"))
    }
}
