import Foundation
import ListClient
import Testing

/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP date.
@Suite struct RetryAfterTests {
    /// Sun, 06 Nov 1994 08:49:37 GMT, the RFC's own example date.
    static let rfcExample = Date(timeIntervalSince1970: 784_111_777)

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:51:37 GMT",  // IMF-fixdate, the form servers must send
        "Sunday, 06-Nov-94 08:51:37 GMT",  // obsolete RFC 850
        "Sun Nov  6 08:51:37 1994",  // obsolete asctime
        "  Sun, 06 Nov 1994 08:51:37 GMT ",
    ])
    func anHTTPDateIsTheTimeUntilIt(value: String) {
        #expect(ListClientError.retryAfterSeconds(value, now: Self.rfcExample) == 120)
    }

    @Test func aDateInThePastMeansNow() {
        #expect(ListClientError.retryAfterSeconds("Sun, 06 Nov 1994 08:49:00 GMT", now: Self.rfcExample) == 0)
    }

    @Test(arguments: [("120", 120.0), ("0", 0), (" 7 ", 7), ("1.5", 1.5)])
    func delaySecondsAreTakenAsTheyAre(value: String, seconds: Double) {
        #expect(ListClientError.retryAfterSeconds(value, now: Self.rfcExample) == seconds)
    }

    @Test(arguments: ["", "soon", "nan", "-3", "inf", "Sun, 06 Nov 1994 25:00:00 GMT", "Sun, 06 Nov 1994 08:49:37 PST"])
    func anythingElseIsIgnored(value: String) {
        #expect(ListClientError.retryAfterSeconds(value, now: Self.rfcExample) == nil)
    }

    /// Issue 26: a 503 whose `Retry-After` was an HTTP date came with no `retryAfter`, so the
    /// follow fell back to its own short back-off. The server's `Date` is "now", so the two
    /// clocks need not agree.
    @Test func aProblemWithAnHTTPDateRetryAfterCarriesTheSeconds() async throws {
        let transport = FakeTransport { _, _ in
            FakeTransport.json(
                #"{"type":"https://listd.dev/problems/overloaded","status":503,"detail":"busy"}"#, status: 503,
                headers: ["Retry-After": "Sun, 06 Nov 1994 08:50:07 GMT", "Date": "Sun, 06 Nov 1994 08:49:37 GMT"])
        }
        let client = ListClient(baseURL: FollowLoopTests.base, token: nil, transport: transport)
        let error = await #expect(throws: ListClientError.self) { _ = try await client.list("g") }
        #expect(error?.status == 503)
        #expect(error?.retryAfter == 30)
    }
}
