import JSON
import ListModel

/// One write to listd as it goes on the wire: method, path and the exact body
/// bytes, made once.
///
/// Why a value: a retry must resend the same bytes (the server fingerprints the
/// method, the target and the body byte for byte, docs/API.md "Retries"), and
/// ``WriteOutbox`` stores writes in a file and sends them after a restart. Both
/// keep this value and never serialize a body again.
///
/// ```swift
/// let write = WriteRequest.createItem(inSection: "fruit", of: "groceries", ["model": ["title": "Pears"]])
/// let answer = try await client.perform(write)
/// ```
public struct WriteRequest: Sendable, Equatable {
    /// `POST`, `PUT`, `PATCH` or `DELETE`.
    public var method: String
    /// The path's segments under the base URL, each percent-encoded when sent.
    public var path: [String]
    /// The body, already serialized; `nil` for none.
    public var body: [UInt8]?
    /// The version the write expects (`If-Match`), if any.
    public var ifMatch: Int64?

    /// Creates a write of `method` to `path` with `body`.
    public init(method: String, path: [String], body: [UInt8]? = nil, ifMatch: Int64? = nil) {
        self.method = method
        self.path = path
        self.body = body
        self.ifMatch = ifMatch
    }

    /// `POST /lists/{list}/sections/{section}/items` with `body` (`{"id"?, "model", "at"?}`).
    public static func createItem(
        inSection section: String, of list: String, _ body: JSONValue, ifMatch: Int64? = nil
    ) -> WriteRequest {
        WriteRequest(
            method: "POST", path: ["lists", list, "sections", section, "items"], body: body.serialized(),
            ifMatch: ifMatch)
    }

    /// `PUT /lists/{list}/items/{item}` with `body`.
    public static func replaceItem(_ item: String, of list: String, _ body: JSONValue, ifMatch: Int64? = nil)
        -> WriteRequest
    {
        WriteRequest(method: "PUT", path: ["lists", list, "items", item], body: body.serialized(), ifMatch: ifMatch)
    }

    /// `PATCH /lists/{list}/items/{item}` with `body`.
    public static func patchItem(_ item: String, of list: String, _ body: JSONValue, ifMatch: Int64? = nil)
        -> WriteRequest
    {
        WriteRequest(method: "PATCH", path: ["lists", list, "items", item], body: body.serialized(), ifMatch: ifMatch)
    }

    /// `DELETE /lists/{list}/items/{item}`.
    public static func deleteItem(_ item: String, of list: String, ifMatch: Int64? = nil) -> WriteRequest {
        WriteRequest(method: "DELETE", path: ["lists", list, "items", item], ifMatch: ifMatch)
    }

    /// `POST /lists/{list}/sections` with `body` (`{"id"?, "model", "items"?, "at"?}`).
    public static func createSection(in list: String, _ body: JSONValue, ifMatch: Int64? = nil) -> WriteRequest {
        WriteRequest(method: "POST", path: ["lists", list, "sections"], body: body.serialized(), ifMatch: ifMatch)
    }

    /// `PUT /lists/{list}/sections/{section}` with `body`.
    public static func replaceSection(
        _ section: String, of list: String, _ body: JSONValue, ifMatch: Int64? = nil
    ) -> WriteRequest {
        WriteRequest(
            method: "PUT", path: ["lists", list, "sections", section], body: body.serialized(), ifMatch: ifMatch)
    }

    /// `PATCH /lists/{list}/sections/{section}` with `body`.
    public static func patchSection(
        _ section: String, of list: String, _ body: JSONValue, ifMatch: Int64? = nil
    ) -> WriteRequest {
        WriteRequest(
            method: "PATCH", path: ["lists", list, "sections", section], body: body.serialized(), ifMatch: ifMatch)
    }

    /// `DELETE /lists/{list}/sections/{section}` (with its items).
    public static func deleteSection(_ section: String, of list: String, ifMatch: Int64? = nil) -> WriteRequest {
        WriteRequest(method: "DELETE", path: ["lists", list, "sections", section], ifMatch: ifMatch)
    }

    /// `PATCH /lists/{list}`: `operations` in one transaction.
    public static func patchList(_ id: String, _ operations: [ListOperation], ifMatch: Int64? = nil) -> WriteRequest {
        let body: JSONValue = .object(["ops": .array(operations.map(\.json))])
        return WriteRequest(method: "PATCH", path: ["lists", id], body: body.serialized(), ifMatch: ifMatch)
    }

    /// `DELETE /lists/{list}`.
    public static func deleteList(_ id: String, ifMatch: Int64? = nil) -> WriteRequest {
        WriteRequest(method: "DELETE", path: ["lists", id], ifMatch: ifMatch)
    }
}
