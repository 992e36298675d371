import JSON
import ListModel

extension Model {
    /// Parses untrusted JSON text and keeps its canonical form.
    ///
    /// Bad JSON, invalid UTF-8, or nesting deeper than `limits.maxDepth` is
    /// rejected as `invalidModel` with the parser's line and column.
    public init(parsing bytes: [UInt8], limits: JSONLimits = JSONLimits()) throws(StoreError) {
        let text: String
        do {
            text = try CanonicalJSON.canonicalize(bytes, limits: limits)
        } catch {
            throw StoreError(.invalidModel, "model is not valid JSON: \(error)")
        }
        self.init(trustedCanonicalText: text)
    }
}
