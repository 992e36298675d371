/// The one error type of ReactiveCore: failures the core itself produces.
///
/// Errors raised by user code (a throwing `map`, a failing source) pass through
/// unchanged; these cases are only the ones an operator creates.
public enum ReactiveError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `timeout(_:scheduler:)` saw no element within `dueTime` (after subscription or the last element).
    case timeout(dueTime: Duration)
    /// `BehaviorSubject.value` was read after the subject failed; carries the failure's description.
    case subjectFailed(String)
    /// `BehaviorSubject.value` was read after the subject completed.
    case subjectCompleted

    /// What happened and what to do about it, for logs and problem details.
    public var description: String {
        switch self {
        case .timeout(let dueTime):
            "sequence timed out: no element within \(dueTime); raise the due time or check that the source still emits"
        case .subjectFailed(let reason):
            "the subject already failed with \(reason); its value is no longer available"
        case .subjectCompleted:
            "the subject already completed; its value is no longer available"
        }
    }
}
