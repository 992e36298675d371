import ArgumentParser
import Foundation
import JSON
import ListClient
import ListView
import ReactiveCore
import SectionDiff

/// `listd watch URL/lists/ID [--where path:value …] [--order [-]path] …`: prints
/// a list's (or a view's) snapshot, then each change as it arrives, until
/// interrupted. For scripts and for people debugging a list.
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print a list's snapshot, then each change as it arrives (until Ctrl-C).",
        discussion: """
            With --where, --q, --order, --group or --limit (or the same parameters in the URL's query),
            the watch follows that view of the list, with the view's own sections and positions:
              listd watch http://127.0.0.1:8080/lists/tasks --where done:false --order -due --limit 20
            text: one line per insert, delete, move and update, with ids and [section, item] positions.
            json: the snapshot, then the change answers as they came, one JSON object a line (NDJSON).
            The token comes from --token or LISTD_TOKEN and is never printed.
            Several URLs (the same list on several instances of a cluster): when the one followed
            stops answering or answers 5xx, the watch moves to the next and goes on from the version
            it holds, saying so on standard error.
            """
    )

    /// How updates are printed.
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text
        case json
    }

    @Argument(
        help: ArgumentHelp(
            "The list's URL, such as http://127.0.0.1:8080/lists/groceries; more than one to fail over between instances.",
            valueName: "url"))
    var urls: [String] = []

    @Option(help: "A bearer token (default: $LISTD_TOKEN).")
    var token: String?

    @Option(help: "text or json (NDJSON).")
    var format: Format = .text

    @Option(
        help: ArgumentHelp(
            "Seconds each long-poll waits on the server, from 0 to 300 (0: the server answers at once, "
                + "so the watch asks again at once)."))
    var pollTimeout: Double = 30

    @Option(
        name: .customLong("where"),
        help: ArgumentHelp(
            "Follow only items whose model has this value at this path (repeatable; all must hold).",
            valueName: "path:value"))
    var conditions: [String] = []

    @Option(name: .customLong("q"), help: "Follow only items with this text in a string of their model.")
    var text: String?

    // Unconditional: `--order -due` is a descending order, not an unknown flag.
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Order the view's items by this path (-path: descending).", valueName: "[-]path"))
    var order: String?

    @Option(help: ArgumentHelp("Group the view's items into one section per value of this path.", valueName: "path"))
    var group: String?

    @Option(help: "Keep only the view's first N items.")
    var limit: Int?

    /// The checks that need no network, run by ArgumentParser before ``run()``.
    func validate() throws {
        // What the server takes for `timeout` (API.md: at most 300; 0 answers at once).
        guard pollTimeout.isFinite, pollTimeout >= 0, pollTimeout <= 300 else {
            throw ValidationError("--poll-timeout must be a number of seconds from 0 to 300, got \(pollTimeout)")
        }
    }

    func run() async throws {
        guard !urls.isEmpty else {
            throw ValidationError("give the list's URL, such as http://127.0.0.1:8080/lists/ID")
        }
        let split = try urls.map(Self.split)
        let list = split[0].1
        if let other = split.first(where: { $0.1 != list }) {
            throw ValidationError("every URL must name the same list: \(list) and \(other.1)")
        }
        let view = try self.view(urls: urls)
        let token = self.token ?? ProcessInfo.processInfo.environment["LISTD_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        let client = ListClient(baseURLs: split.map(\.0), token: token, transport: SocketTransport())
        let printer = UpdatePrinter(format: format)
        let options = FollowOptions(
            pollTimeout: .milliseconds(Int64(pollTimeout * 1000)),
            onFailover: { failover in
                let line = "listd watch: \(failover.from) failed (\(failover.error)); following from \(failover.to)\n"
                FileHandle.standardError.write(Data(line.utf8))
            })
        let interrupts = Self.exitOnInterrupt()
        defer { interrupts.forEach { $0.cancel() } }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            // The subscription lives until the process exits or the follow ends.
            _ = client.follow(list: list, view: view, options: options).subscribe { event in
                switch event {
                case .next(let update): printer.print(update)
                case .completed: continuation.resume()
                case .error(let error): continuation.resume(throwing: CommandFailure("\(list): \(error)"))
                }
            }
        }
    }

    /// The view the URLs' queries and the flags name together (the whole list
    /// when none does); every URL must name the same view.
    func view(urls: [String]) throws -> ViewSpec {
        let queries = urls.map { URL(string: $0)?.query(percentEncoded: true) ?? "" }
        var flags: [(name: String, value: String)] = conditions.map { ("where", $0) }
        if let text { flags.append(("q", text)) }
        if let order { flags.append(("order", order)) }
        if let group { flags.append(("group", group)) }
        if let limit { flags.append(("limit", String(limit))) }
        let inURLs: [ViewSpec]
        let view: ViewSpec
        do throws(ViewSpecError) {
            inURLs = try queries.map { query throws(ViewSpecError) in try ViewSpec(parsing: query) }
            view = try ViewSpec(queryItems: try ViewSpec.decodeQuery(queries[0]) + flags)
        } catch {
            throw ValidationError(error.detail)
        }
        if let other = inURLs.first(where: { $0 != inURLs[0] }) {
            throw ValidationError("every URL must name the same view: \"\(inURLs[0])\" and \"\(other)\"")
        }
        return view
    }

    /// `http://host:port/prefix/lists/ID` → (`http://host:port/prefix`, `ID`).
    ///
    /// `https://` is refused with the reason: the watch sends with `SocketTransport`
    /// (the HTTPClient module: plain sockets, no TLS), so that the `listd` binary
    /// links neither FoundationNetworking nor libcurl.
    static func split(_ text: String) throws -> (URL, String) {
        let url = URL(string: text)
        if url?.scheme?.lowercased() == "https" {
            throw ValidationError(
                "listd watch speaks plain http:// only: its transport has no TLS, so it cannot follow \(text). "
                    + "Give the http:// URL of the instance (on a trusted network, or through an SSH tunnel "
                    + "or a local TLS-terminating proxy), or follow the list from Swift with "
                    + "ListClient(baseURL:token:), which sends https:// with URLSession.")
        }
        guard let url, url.scheme?.lowercased() == "http", url.host != nil else {
            throw ValidationError("the URL must be http://HOST[:PORT]/lists/ID, got \(text)")
        }
        let parts = url.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard parts.count >= 2, parts[parts.count - 2] == "lists", let list = parts.last, !list.isEmpty else {
            throw ValidationError("the URL must end in /lists/ID, got \(text)")
        }
        var components = URLComponents()
        components.scheme = "http"
        components.host = url.host
        components.port = url.port
        components.path = parts.count > 2 ? "/" + parts.dropLast(2).joined(separator: "/") : ""
        guard let base = components.url else { throw ValidationError("cannot parse \(text)") }
        return (base, list)
    }

    /// SIGINT and SIGTERM end the watch with status 0: being interrupted is how it is meant to end.
    static func exitOnInterrupt() -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                Foundation.exit(0)
            }
            source.resume()
            return source
        }
    }
}

/// Formats follow updates as text lines or NDJSON on standard output.
struct UpdatePrinter: Sendable {
    let format: WatchCommand.Format

    func print(_ update: FollowUpdate) {
        let lines: [String]
        switch format {
        case .json: lines = [Self.json(update)]
        case .text: lines = Self.text(update)
        }
        var output = lines.joined(separator: "\n")
        output += "\n"
        FileHandle.standardOutput.write(Data(output.utf8))
    }

    static func json(_ update: FollowUpdate) -> String {
        switch update {
        case .snapshot(let state): return state.json.canonicalText
        case .changes(let change): return change.answer.raw.canonicalText
        case .reset(let state):
            let answer: JSONValue = [
                "list": .string(state.id), "epoch": .string(state.epoch), "to": .number(JSONNumber(state.version)),
                "reset": true, "snapshot": state.json,
            ]
            return answer.canonicalText
        case .deleted(let list):
            let answer: JSONValue = ["list": .string(list), "deleted": true]
            return answer.canonicalText
        }
    }

    static func text(_ update: FollowUpdate) -> [String] {
        switch update {
        case .snapshot(let state):
            return ["snapshot \(state.id) version \(state.version) epoch \(state.epoch)"] + contents(state)
        case .reset(let state):
            return ["reset \(state.id) version \(state.version) epoch \(state.epoch)"] + contents(state)
        case .deleted(let list): return ["deleted \(list)"]
        case .changes(let change):
            var lines = ["changes \(change.state.id) \(change.from) -> \(change.state.version)"]
            var before = change.before
            for (number, applied) in change.stages.enumerated() {
                lines.append("stage \(number + 1)/\(change.stages.count)")
                lines += describe(applied.stage, before: before, after: applied.sections)
                before = applied.sections
            }
            return lines
        }
    }

    static func contents(_ state: ListState) -> [String] {
        var lines: [String] = []
        for (index, section) in state.sections.enumerated() {
            lines.append("  section \(index) \(section.model.id) \(section.model.model.text)")
            for (position, item) in section.items.enumerated() {
                lines.append("    item [\(index), \(position)] \(item.id) \(item.model.text)")
            }
        }
        return lines
    }

    static func describe(_ stage: ListStage, before: ListSections, after: ListSections) -> [String] {
        func sectionID(_ sections: ListSections, _ index: Int) -> String {
            sections.indices.contains(index) ? sections[index].model.id : "?"
        }
        func itemID(_ sections: ListSections, _ path: ElementPath) -> String {
            guard sections.indices.contains(path.section), sections[path.section].items.indices.contains(path.element)
            else { return "?" }
            return sections[path.section].items[path.element].id
        }
        var lines: [String] = []
        for index in stage.sectionDeleted { lines.append("  delete section \(index) \(sectionID(before, index))") }
        for insertion in stage.sectionInserted {
            lines.append(
                "  insert section \(insertion.at) \(insertion.section.model.id) \(insertion.section.model.model.text) (\(insertion.section.items.count) items)"
            )
        }
        for update in stage.sectionUpdated {
            lines.append("  update section \(update.at) \(update.model.id) \(update.model.model.text)")
        }
        for move in stage.sectionMoved {
            lines.append("  move section \(move.from) -> \(move.to) \(sectionID(before, move.from))")
        }
        for path in stage.itemDeleted { lines.append("  delete item \(path) \(itemID(before, path))") }
        for insertion in stage.itemInserted {
            lines.append("  insert item \(insertion.at) \(insertion.item.id) \(insertion.item.model.text)")
        }
        for update in stage.itemUpdated {
            lines.append("  update item \(update.at) \(update.item.id) \(update.item.model.text)")
        }
        for move in stage.itemMoved {
            lines.append("  move item \(move.from) -> \(move.to) \(itemID(after, move.to))")
        }
        return lines
    }
}
