import Testing
@testable import ListAPI

@Suite struct ProblemTests {
    @Test func typeIsAURIUnderTheListdPrefix() {
        let problem = Problem(slug: "unknown-list", title: "Unknown list", status: 404, detail: "no list 'x'")
        #expect(problem.type == "https://listd.dev/problems/unknown-list")
    }
}
