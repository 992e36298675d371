// SwiftUI binding: an `@Observable` model that follows a list and holds its
// decoded sections and connection state for a view.
//
// It needs Observation only, not SwiftUI, so it is compiled and tested on Linux
// too; its logic is ``FollowedListState``. SwiftUI's `List`/`ForEach` diffs by
// id and animates by itself, so the model publishes states, not stages.
#if canImport(Observation)
    import ListView
    import Observation

    /// A followed list (or a view of it) for SwiftUI views.
    ///
    /// ```swift
    /// struct TasksView: View {
    ///     @State private var tasks = FollowedListModel<Todo>()
    ///     let client: ListClient
    ///     var body: some View {
    ///         List(tasks.state.sections) { section in
    ///             Section(section.id) { ForEach(section.items) { Text($0.model.title) } }
    ///         }
    ///         .overlay { if tasks.state.connection != .live { ProgressView() } }
    ///         .task { await tasks.follow(client, list: "tasks", view: "where=done:false&order=due") }
    ///     }
    /// }
    /// ```
    @MainActor @Observable
    public final class FollowedListModel<Model: Decodable & Sendable> {
        /// The sections, connection state and error, as of the last event.
        public private(set) var state: FollowedListState<Model>

        /// A model with nothing followed yet.
        public init() { state = FollowedListState() }

        /// Follows `list` (or a view of it) until the calling task is cancelled
        /// (SwiftUI's `.task` cancels it when the view disappears) or the follow ends.
        public func follow(
            _ client: ListClient, list: String, view: ViewSpec = .wholeList, options: FollowOptions = FollowOptions()
        ) async {
            state = FollowedListState()
            await run(client, list: list, view: view, options: options)
        }

        /// Follows the view `query` names (`"where=done:false&order=due"`) until the
        /// calling task is cancelled or the follow ends; a query that does not parse
        /// ends at once with an `.invalidRequest` error in ``state`` that names it.
        public func follow(
            _ client: ListClient, list: String, view query: String, options: FollowOptions = FollowOptions()
        ) async {
            state = FollowedListState()
            guard let view = state.view(parsing: query) else { return }
            await run(client, list: list, view: view, options: options)
        }

        private func run(_ client: ListClient, list: String, view: ViewSpec, options: FollowOptions) async {
            do {
                for try await event in client.events(list: list, view: view, options: options) {
                    try state.apply(event)
                }
            } catch {
                state.fail(error)
            }
        }
    }
#endif
