import Testing

@testable import SectionDiff

@Suite struct ElementPathTests {
    @Test func ordersBySectionThenElement() {
        #expect(ElementPath(element: 5, section: 0) < ElementPath(element: 0, section: 1))
        #expect(ElementPath(element: 1, section: 2) < ElementPath(element: 2, section: 2))
        #expect(ElementPath(element: 3, section: 1).description == "[1, 3]")
    }
}
