/// Why a stage could not be applied to a state: the stage does not fit the state
/// (the client's data is out of step) or breaks a batch-update rule.
///
/// Carries the stage's number, the operation (field and entry index, as on the
/// wire) and what was wrong, so a log line says exactly which entry failed.
public struct SectionDiffError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The zero-based number of the stage in its changeset (0 for a lone stage).
    public var stage: Int
    /// The offending operation, such as `itemMoved[3]`.
    public var operation: String
    /// What was wrong, in words.
    public var reason: String

    /// Creates an error.
    public init(stage: Int, operation: String, reason: String) {
        self.stage = stage
        self.operation = operation
        self.reason = reason
    }

    /// `stage 1, itemMoved[3]: reason`.
    public var description: String { "stage \(stage), \(operation): \(reason)" }
}
