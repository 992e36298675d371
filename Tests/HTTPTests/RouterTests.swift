import Testing

@testable import HTTP

@Suite struct RouterTests {
    func router() -> Router<String> {
        var router = Router<String>()
        router.add(.get, "/lists", "list all")
        router.add(.post, "/lists", "create")
        router.add(.get, "/lists/{list}", "show")
        router.add(.put, "/lists/{list}", "replace")
        router.add(.get, "/lists/new", "form")
        router.add(.get, "/lists/{list}/items/{item}", "item")
        router.add(.delete, "/lists/{list}/items/{item}", "delete item")
        return router
    }

    func matched(_ match: RouteMatch<String>) -> (String, [String: String], String)? {
        if case .matched(let handler, let parameters, let pattern) = match { return (handler, parameters, pattern) }
        return nil
    }

    @Test func matchesParameters() throws {
        let found = try #require(matched(router().match(method: .get, path: "/lists/groceries/items/leek")))
        #expect(found.0 == "item")
        #expect(found.1 == ["list": "groceries", "item": "leek"])
        #expect(found.2 == "/lists/{list}/items/{item}")
    }

    @Test func literalSegmentsBeatParameters() throws {
        #expect(try #require(matched(router().match(method: .get, path: "/lists/new"))).0 == "form")
        #expect(try #require(matched(router().match(method: .get, path: "/lists/old"))).0 == "show")
    }

    @Test func percentDecodesParameters() throws {
        let found = try #require(matched(router().match(method: .get, path: "/lists/caf%C3%A9%20au%20lait")))
        #expect(found.1["list"] == "café au lait")
        let plus = try #require(matched(router().match(method: .get, path: "/lists/a+b")))
        #expect(plus.1["list"] == "a+b")
    }

    @Test func anEncodedSlashIsDataInsideOneSegment() throws {
        let found = try #require(matched(router().match(method: .get, path: "/lists/a%2Fitems%2Fb")))
        #expect(found.0 == "show")
        #expect(found.1["list"] == "a/items/b")
    }

    @Test(arguments: [
        "/lists/%zz", "/lists/%4", "/lists/%FF%FE", "/lists/", "/lists//items/x", "/nope", "", "lists", "/lists/a/",
    ])
    func unmatchablePathsAreNotFound(_ path: String) {
        guard case .notFound = router().match(method: .get, path: path) else {
            Issue.record("\(path) should not match")
            return
        }
    }

    @Test func literalSegmentsMatchTheirEscapedForm() throws {
        #expect(try #require(matched(router().match(method: .get, path: "/%6Cists"))).0 == "list all")
    }

    @Test func wrongMethodListsTheAllowedOnes() {
        guard case .methodNotAllowed(let allowed) = router().match(method: .delete, path: "/lists/x") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == [.get, .put, .head])
        guard case .methodNotAllowed(let forCollection) = router().match(method: .patch, path: "/lists") else {
            Issue.record("expected 405")
            return
        }
        #expect(forCollection == [.get, .post, .head])
    }

    @Test func headMatchesGetRoutes() throws {
        let found = try #require(matched(router().match(method: .head, path: "/lists/x")))
        #expect(found.0 == "show")
        var withHead = router()
        withHead.add(.head, "/lists/{list}", "head")
        #expect(try #require(matched(withHead.match(method: .head, path: "/lists/x"))).0 == "head")
    }
}

@Suite struct HTTPValuesTests {
    @Test func headersLookUpCaseInsensitivelyAndKeepOrder() {
        var headers: HTTPHeaders = ["Content-Type": "a", "X-Many": "1"]
        headers.add(name: "x-many", value: "2")
        #expect(headers["content-type"] == "a")
        #expect(headers["CONTENT-TYPE"] == "a")
        #expect(headers["missing"] == nil)
        #expect(headers.values(for: "X-MANY") == ["1", "2"])
        #expect(headers.contains("x-many"))
        headers.replaceOrAdd(name: "X-Many", value: "3")
        #expect(headers.values(for: "x-many") == ["3"])
        headers.replaceOrAdd(name: "Etag", value: "\"v1\"")
        #expect(headers.map(\.name) == ["Content-Type", "X-Many", "Etag"])
        headers.remove(name: "content-type")
        #expect(headers.count == 2)
        #expect(!headers.contains("Content-Type"))
        #expect(HTTPHeaders([("A", "1")]) == HTTPHeaders([("a", "1")]))
        #expect(HTTPHeaders([("A", "1")]) != HTTPHeaders([("A", "2")]))
    }

    @Test func queryItemsAreDecodedInOrder() {
        let request = Request(head: RequestHead(method: .get, target: "/s?q=caf%C3%A9+au+lait&flag&&x=%zz&q=2&empty="))
        #expect(request.path == "/s")
        #expect(
            request.queryItems == [
                QueryItem(name: "q", value: "café au lait"), QueryItem(name: "flag", value: ""),
                QueryItem(name: "x", value: "%zz"), QueryItem(name: "q", value: "2"),
                QueryItem(name: "empty", value: ""),
            ])
        #expect(request.queryValue("q") == "café au lait")
        #expect(request.queryValue("none") == nil)
        #expect(Request(head: RequestHead(method: .get, target: "/s")).queryItems.isEmpty)
    }

    @Test func requestConveniencesReadTheHead() {
        let request = Request(head: RequestHead(method: .put, target: "/a?b", headers: ["ETag": "x"]))
        #expect(request.method == .put)
        #expect(request.head.query == "b")
        #expect(request.header("etag") == "x")
    }

    @Test func statusesKnowTheirReasonPhrases() {
        #expect(HTTPStatus(code: 404) == .notFound)
        #expect(HTTPStatus(code: 431).reasonPhrase == "Request Header Fields Too Large")
        #expect(HTTPStatus(code: 299).reasonPhrase == "")
        #expect(HTTPParseError(status: .badRequest, reason: "x").description == "400 Bad Request: x")
    }
}
