import Testing
import HTTP
@testable import ListAPI

@Suite struct ProblemTests {
    @Test func typeIsAURIUnderTheListdPrefix() {
        let problem = Problem(slug: "unknown-list", title: "Unknown list", status: 404, detail: "no list 'x'")
        #expect(problem.type == "https://listd.dev/problems/unknown-list")
    }
}

@Suite struct ProblemRenderingTests {
    @Test func rendersOneJSONObjectWithTheDetailEscaped() throws {
        let problem = Problem(slug: "invalid-request", title: "Bad", status: 400, detail: "field \"a\"\nline two")
        let response = problem.response()
        #expect(response.status.code == 400)
        #expect(response.headers["Content-Type"] == "application/problem+json")
        let text = String(decoding: response.body, as: UTF8.self)
        #expect(text == #"{"type":"https://listd.dev/problems/invalid-request","title":"Bad","status":400,"detail":"field \"a\"\nline two"}"# + "\n")
    }

    @Test func headersTravelWithTheProblem() {
        let response = Problem.unauthorized("no token").response()
        #expect(response.status.code == 401)
        #expect(response.headers["WWW-Authenticate"]?.hasPrefix("Bearer") == true)
    }
}
