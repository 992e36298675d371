import HTTP
import JSON
import Testing

/// A refusal's status, `type` and `detail`, expecting `application/problem+json`
/// (a write that went through answers its change instead: empty type and detail).
func problem(_ response: Response) throws -> (status: Int, type: String, detail: String) {
    #expect(response.headers["Content-Type"] == "application/problem+json")
    // A write that went through answers with its whole change: no problem to read.
    guard response.headers["Content-Type"] == "application/problem+json" else {
        return (Int(response.status.code), "", "")
    }
    let value = try JSONValue(parsing: response.body)
    return (
        Int(response.status.code), value["type"]?.stringValue ?? "", value["detail"]?.stringValue ?? ""
    )
}
