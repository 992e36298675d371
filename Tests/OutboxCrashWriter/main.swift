// A child process for ListClientTests' outbox restart test: queues `count` item
// inserts in a WriteOutbox over `file`, prints "queued", then drains, printing
// "applied <n>" as each write is answered, until it is killed (or prints
// "drained" if it gets to the end first).
//
// Usage: OutboxCrashWriter <base URL> <outbox file> <list> <count>
import Foundation
import JSON
import ListClient
import ListClientNetworking

let arguments = CommandLine.arguments
guard arguments.count == 5, let baseURL = URL(string: arguments[1]), let count = Int(arguments[4]) else {
    FileHandle.standardError.write(Data("usage: OutboxCrashWriter <base URL> <outbox file> <list> <count>\n".utf8))
    exit(2)
}
let list = arguments[3]

/// Writes a line to stdout at once: the parent reads it as it comes.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

do {
    let client = ListClient(baseURL: baseURL, token: nil)
    let outbox = try await WriteOutbox(
        file: URL(fileURLWithPath: arguments[2]), client: client, draining: false)
    for number in 0..<count {
        try await outbox.enqueue(
            .createItem(inSection: "s", of: list, ["model": ["n": .number(JSONNumber(number))]]))
    }
    say("queued")
    let outcomes = outbox.outcomes()
    outbox.startDraining()
    var answered = 0
    for await outcome in outcomes {
        switch outcome {
        case .applied(let write, _): say("applied \(write.id)")
        case .rejected(let write, let error): say("rejected \(write.id) \(error)")
        }
        answered += 1
        if answered == count { break }
    }
    say("drained")
} catch {
    FileHandle.standardError.write(Data("OutboxCrashWriter: \(error)\n".utf8))
    exit(1)
}
