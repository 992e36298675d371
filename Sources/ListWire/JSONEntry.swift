import SectionDiff

/// A canonical JSON text (object keys sorted, no insignificant white space), with
/// a digest computed once so that two texts are compared by digest, then bytes.
///
/// listd stores models in canonical form, so two models are equal exactly when
/// their texts are byte for byte equal; comparing a precomputed digest first
/// makes the common "changed" answer O(1) and leaves the byte comparison for texts
/// that are probably equal. `JSONText` does not check that the text is canonical:
/// the JSON module produces it.
///
/// The digest is seeded per process: never store or send it.
public struct JSONText: Hashable, Sendable, CustomStringConvertible {
    /// The canonical text.
    public let text: String
    /// A per-process hash of `text`'s bytes.
    public let digest: Int

    /// Wraps a canonical JSON text and computes its digest.
    ///
    /// - Complexity: O(n) in the length of the text, once.
    public init(_ text: String) {
        self.text = text
        var hasher = Hasher()
        var copy = text
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        self.digest = hasher.finalize()
    }

    /// Equal digests, then equal bytes: canonical texts are equal exactly when their bytes are.
    @inlinable
    public static func == (lhs: JSONText, rhs: JSONText) -> Bool {
        lhs.digest == rhs.digest && utf8Equal(lhs.text, rhs.text)
    }

    /// Combines the precomputed digest only.
    public func hash(into hasher: inout Hasher) { hasher.combine(digest) }

    /// The text itself.
    public var description: String { text }
}

/// Byte equality of two strings (Swift's `==` compares canonical equivalence,
/// which is slower and not what canonical JSON means).
@inlinable
func utf8Equal(_ lhs: String, _ rhs: String) -> Bool {
    if lhs.utf8.count != rhs.utf8.count { return false }
    let fast = lhs.utf8.withContiguousStorageIfAvailable { left in
        rhs.utf8.withContiguousStorageIfAvailable { right in
            left.elementsEqual(right)
        }
    }
    if let fast, let answer = fast { return answer }
    return lhs.utf8.elementsEqual(rhs.utf8)
}

/// listd's own element, used for sections and items alike: a string id and a
/// canonical JSON model. It is what the wire carries (`{"id","model"}`) and what
/// both the server and the clients diff and apply stages to.
///
/// This is the fast path of the diff: the id's hash is computed once when the
/// entry is made (ids are hashed again on every diff otherwise), and content is
/// compared by ``JSONText``'s digest, then bytes.
public struct JSONEntry: Diffable, WireEntry, Hashable, Sendable, CustomStringConvertible {
    /// The section's or item's id, unique in its list.
    public let id: String
    /// The section's or item's model.
    public let model: JSONText
    /// `id`'s hash, computed once (seeded per process).
    public let identityHash: Int

    /// Makes an entry; hashes the id once.
    public init(id: String, model: JSONText) {
        self.id = id
        self.model = model
        self.identityHash = id.hashValue
    }

    /// Compares models: digest first, then bytes.
    @inlinable
    public func hasSameContent(as other: JSONEntry) -> Bool { model == other.model }

    /// Same id (by bytes) and same model.
    @inlinable
    public static func == (lhs: JSONEntry, rhs: JSONEntry) -> Bool {
        lhs.identityHash == rhs.identityHash && lhs.id == rhs.id && lhs.model == rhs.model
    }

    /// Combines the cached id hash and the model digest.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(identityHash)
        hasher.combine(model.digest)
    }

    /// The id, as written on the wire.
    @inlinable public var wireID: String { id }

    /// The model's canonical text, spliced into the wire form as it is.
    @inlinable public var wireModelText: String { model.text }

    /// `id=model`, for logs and test failures.
    public var description: String { "\(id)=\(model.text)" }
}
