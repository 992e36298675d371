/// An element the diff can follow: an identity that survives changes, and
/// content that may change.
///
/// Two elements with equal `id`s are the same element: if they sit at different
/// places the diff reports a move, and if their content differs it reports an
/// update. The identity is `Identifiable.id`; the content comparison is
/// ``hasSameContent(as:)``, which defaults to `==` for `Equatable` types.
///
/// ``identityHash`` lets a type hand the diff a hash it computed once (listd's
/// `JSONEntry`, in ListWire, caches it), instead of hashing the identity on every diff.
public protocol Diffable: Identifiable {
    /// A hash of `id`: equal identities must give equal hashes.
    ///
    /// The default is `id.hashValue`, which is seeded per process, so an attacker
    /// cannot choose identities that all collide.
    var identityHash: Int { get }

    /// Whether `self` and `other`, which have the same identity, also have the same content.
    ///
    /// `false` makes the diff report an update of the element.
    func hasSameContent(as other: Self) -> Bool

    /// Whether `self` and `other` have the same identity: `id == other.id`.
    ///
    /// The matching's inner loops ask this for every element; a conformer
    /// whose `id` is built on the fly (``Condensed``) answers it without
    /// building two identities and comparing them through their generic `==`.
    func hasSameIdentity(as other: Self) -> Bool
}

extension Diffable {
    /// The identity's own hash, seeded per process.
    @inlinable
    public var identityHash: Int { id.hashValue }

    @inlinable
    public func hasSameIdentity(as other: Self) -> Bool { id == other.id }
}

extension Diffable where Self: Equatable {
    /// Content is the whole value: any difference is an update.
    @inlinable
    public func hasSameContent(as other: Self) -> Bool { self == other }
}
