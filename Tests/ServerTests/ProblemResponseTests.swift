import Foundation
import HTTP
import Testing

@testable import Server

@Suite struct ProblemResponseTests {
    @Test func hasListdShapeAndEscapesTheDetail() throws {
        let detail = "bad \"field\"\\ with\nnewline and \u{01}"
        let response = ProblemResponse.make(status: .requestHeaderFieldsTooLarge, detail: detail)
        #expect(response.status == .requestHeaderFieldsTooLarge)
        #expect(response.headers["content-type"] == "application/problem+json")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(object["type"] as? String == "https://listd.dev/problems/header-fields-too-large")
        #expect(object["title"] as? String == "Request Header Fields Too Large")
        #expect(object["status"] as? Int == 431)
        #expect(object["detail"] as? String == detail)
    }

    @Test func slugsForOtherStatusesComeFromTheReason() {
        #expect(ProblemResponse.slug(for: .requestTimeout) == "request-timeout")
        #expect(ProblemResponse.slug(for: HTTPStatus(code: 418, reasonPhrase: "I'm a teapot")) == "i-m-a-teapot")
    }
}
