/// The position of an element in a sectioned collection: its section's index
/// and its index inside that section.
///
/// Encoded on the wire as a `[section, element]` pair.
public struct ElementPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The index of the section.
    public var section: Int
    /// The index of the element inside its section.
    public var element: Int

    /// Creates a path from a section index and an element index.
    public init(element: Int, section: Int) {
        self.section = section
        self.element = element
    }

    public static func < (lhs: ElementPath, rhs: ElementPath) -> Bool {
        (lhs.section, lhs.element) < (rhs.section, rhs.element)
    }

    public var description: String { "[\(section), \(element)]" }
}
