import HTTP
import JSON
import Testing

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
        #expect(
            text
                == #"{"type":"https://listd.dev/problems/invalid-request","title":"Bad","status":400,"detail":"field \"a\"\nline two"}"#
                + "\n")
    }

    @Test func headersTravelWithTheProblem() {
        let response = Problem.unauthorized("no token").response()
        #expect(response.status.code == 401)
        #expect(response.headers["WWW-Authenticate"]?.hasPrefix("Bearer") == true)
    }
}

@Suite struct RefusalProblemTests {
    @Test func theServersRefusalsAreListdProblems() throws {
        let detail = "bad \"field\"\\ with\nnewline and \u{01}"
        let response = Problem.refused(status: .requestHeaderFieldsTooLarge, detail: detail).response()
        #expect(response.status == .requestHeaderFieldsTooLarge)
        #expect(response.headers["Content-Type"] == "application/problem+json")
        let value = try JSONValue(parsing: response.body)
        #expect(value["type"]?.stringValue == "https://listd.dev/problems/header-fields-too-large")
        #expect(value["title"]?.stringValue == "Request Header Fields Too Large")
        #expect(value["detail"]?.stringValue == detail)
    }

    @Test func slugsForOtherStatusesComeFromTheReason() {
        #expect(Problem.refusalSlug(for: .requestTimeout) == "request-timeout")
        #expect(Problem.refusalSlug(for: .serviceUnavailable) == "service-unavailable")
        #expect(Problem.refusalSlug(for: HTTPStatus(code: 418, reasonPhrase: "I'm a teapot")) == "i-m-a-teapot")
    }
}
