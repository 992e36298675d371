import Testing

@testable import ListAPI

@Suite struct AccessPolicyTests {
    let policy = AccessPolicy(writeToken: "w-secret", readToken: "r-secret")

    private func caller(_ decision: AccessPolicy.Decision) -> Caller? {
        if case .allowed(let caller) = decision { return caller }
        return nil
    }

    @Test func withoutTokensEverythingIsAllowed() {
        let open = AccessPolicy(writeToken: nil, readToken: nil)
        #expect(caller(open.decide(authorization: nil, access: .admin, address: "127.0.0.1:5"))?.kind == .open)
        #expect(!open.requiresAuthentication)
    }

    @Test func theWriteTokenReadsWritesAndAdministers() {
        for access in [AccessPolicy.Access.read, .write, .admin, .metrics] {
            #expect(
                caller(policy.decide(authorization: "Bearer w-secret", access: access, address: ""))?.kind
                    == .writeToken)
        }
        #expect(
            caller(policy.decide(authorization: "bearer w-secret", access: .read, address: ""))?.kind == .writeToken)
    }

    @Test func theReadTokenOnlyReadsAndScrapesMetrics() {
        #expect(caller(policy.decide(authorization: "Bearer r-secret", access: .read, address: ""))?.kind == .readToken)
        #expect(
            caller(policy.decide(authorization: "Bearer r-secret", access: .metrics, address: ""))?.kind == .readToken)
        for access in [AccessPolicy.Access.write, .admin] {
            guard case .forbidden = policy.decide(authorization: "Bearer r-secret", access: access, address: "") else {
                Issue.record("a read token must not write")
                return
            }
        }
    }

    @Test(arguments: [
        nil, "", "Bearer", "Bearer ", "Basic w-secret", "Bearer w-secre", "Bearer w-secrets", "Bearer W-SECRET",
    ])
    func missingOrWrongCredentialsAreUnauthenticated(_ header: String?) {
        guard case .unauthenticated = policy.decide(authorization: header, access: .read, address: "") else {
            Issue.record("\(String(describing: header)) must be refused")
            return
        }
    }

    @Test func constantTimeComparisonIsStillAnEqualityTest() {
        #expect(AccessPolicy.constantTimeEquals(Array("abc".utf8), Array("abc".utf8)))
        #expect(!AccessPolicy.constantTimeEquals(Array("abd".utf8), Array("abc".utf8)))
        #expect(!AccessPolicy.constantTimeEquals(Array("ab".utf8), Array("abc".utf8)))
        #expect(!AccessPolicy.constantTimeEquals([], Array("abc".utf8)))
        // A presented token that is 256 bytes longer must not wrap the length check.
        #expect(
            !AccessPolicy.constantTimeEquals(Array("abc".utf8) + [UInt8](repeating: 0, count: 256), Array("abc".utf8)))
    }

    @Test func tokensAreNeverRendered() {
        #expect(!policy.description.contains("secret"))
        #expect(!String(describing: policy).contains("secret"))
        #expect(!String(reflecting: policy).contains("secret"))
        var dumped = ""
        dump(policy, to: &dumped)
        #expect(!dumped.contains("secret"))
    }

    @Test func badTokenConfigurationsAreExplained() {
        #expect(AccessPolicy.validationFailure(writeToken: nil, readToken: "r") != nil)
        #expect(AccessPolicy.validationFailure(writeToken: "same", readToken: "same") != nil)
        #expect(AccessPolicy.validationFailure(writeToken: "has space", readToken: nil) != nil)
        #expect(AccessPolicy.validationFailure(writeToken: "", readToken: nil) != nil)
        #expect(AccessPolicy.validationFailure(writeToken: "w", readToken: "r") == nil)
    }
}
