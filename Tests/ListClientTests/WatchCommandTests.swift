import Foundation
import Glibc
import JSON
import ListClient
import ListView
import ListdTestSupport
import Testing

/// `listd watch` as a user runs it: a child process against a real server.
@Suite struct WatchCommandTests {
    /// `listd watch` with `arguments`, its output and errors in a log. Started
    /// with ``ChildProcess`` (posix_spawn, waitpid): Foundation's `Process`
    /// learns of an exit when a socket it gave the child closes, and a watch
    /// spawned meanwhile by another test inherits that socket; two tests
    /// waiting so on Swift's two cooperative threads hung a whole run.
    static func watch(_ arguments: [String], environment: [String: String] = [:]) throws -> (ChildProcess, OutputLog) {
        var env = ChildProcess.environmentWithoutListd
        env.merge(environment) { $1 }
        return try ChildProcess.logged(try ListdBinary.url, ["watch"] + arguments, environment: env)
    }

    @Test func textLinesThenExitZeroOnInterrupt() async throws {
        let token = "watch-token-987"
        let server = try await TestServer(environment: ["LISTD_WRITE_TOKEN": token])
        defer { server.stop() }
        let client = server.client(token: token)
        _ = try await client.createList(id: "w", name: "W", sections: RandomWriter.initialSections)
        let (process, log) = try Self.watch(
            ["\(server.baseURL)/lists/w", "--poll-timeout", "5"], environment: ["LISTD_TOKEN": token])
        #expect(await log.firstCapture(of: #"(snapshot w version \d+)"#, timeout: .seconds(10)) != nil)
        #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters", token: token)) == 1 })
        _ = try await client.patchList(
            "w", [.updateItem(id: "a2", model: 7), .moveItem(id: "b1", section: "a", to: 0)])
        #expect(await log.firstCapture(of: #"(update item \[0, \d\] a2 7)"#, timeout: .seconds(10)) != nil)
        #expect(log.text.contains("move item"))
        kill(process.processIdentifier, SIGINT)
        _ = await process.exited()
        await log.finished()
        #expect(process.terminationStatus == 0)
        #expect(!log.text.contains(token))
    }

    @Test func jsonPrintsTheRawAnswersAsNDJSON() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let client = server.client()
        _ = try await client.createList(id: "j", name: "J", sections: RandomWriter.initialSections)
        let (process, log) = try Self.watch(["\(server.baseURL)/lists/j", "--format", "json"])
        defer {
            kill(process.processIdentifier, SIGINT)
            process.waitUntilExit()
        }
        #expect(await log.firstCapture(of: #"("version":1)"#, timeout: .seconds(10)) != nil)
        #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 1 })
        _ = try await client.patchList("j", [.updateItem(id: "a1", model: 5)])
        #expect(await log.firstCapture(of: #"("to":2)"#, timeout: .seconds(10)) != nil)
        let lines = log.text.split(separator: "\n")
        #expect(lines.count == 2)
        for line in lines { #expect((try? JSONValue(parsing: String(line))) != nil) }
    }

    /// Two instances on one PostgreSQL database, both URLs given: when the one
    /// followed stops, the watch says so on standard error and goes on from the
    /// other, from the version it held (a change, not a new snapshot or reset).
    @Test(.enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
    func severalURLsFailOverToTheNextInstance() async throws {
        let database = try await TestPostgres.createDatabase()
        defer { database.drop() }
        let first = try await TestServer(store: database.url)
        let second = try await TestServer(store: database.url)
        defer {
            first.stop()
            second.stop()
        }
        _ = try await second.client().createList(id: "f", name: "F", sections: RandomWriter.initialSections)
        let (process, log) = try Self.watch([
            "\(first.baseURL)/lists/f", "\(second.baseURL)/lists/f", "--poll-timeout", "2",
        ])
        defer {
            kill(process.processIdentifier, SIGINT)
            process.waitUntilExit()
        }
        #expect(await log.firstCapture(of: #"(snapshot f version 1)"#, timeout: .seconds(10)) != nil)
        #expect(await eventually(10) { (try? await first.gauge("listd_parked_waiters")) == 1 })
        first.stop()
        _ = try await second.client().patchList("f", [.updateItem(id: "a1", model: 9)])
        #expect(await log.firstCapture(of: #"(following from http://127\.0\.0\.1:\d+)"#, timeout: .seconds(20)) != nil)
        #expect(await log.firstCapture(of: #"(changes f 1 -> 2)"#, timeout: .seconds(20)) != nil)
        #expect(await log.firstCapture(of: #"(update item \[0, \d\] a1 9)"#, timeout: .seconds(10)) != nil)
        // The watch prints a reset as a line of its own, `reset f version …`;
        // the transport error it names on failing over may itself say
        // "Connection reset by peer", which is not one.
        #expect(!log.text.split(separator: "\n").contains { $0.hasPrefix("reset f") }, "no reset:\n\(log.text)")
        #expect(log.text.components(separatedBy: "snapshot f").count == 2, "one snapshot only:\n\(log.text)")
    }

    /// `--where`, `--order`, `--group`, `--limit` (with a condition in the URL's
    /// query too): the watch prints the view's snapshot, with its sections and
    /// positions, and only the writes that change the view.
    @Test func followsTheViewTheFlagsAndTheQueryName() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let client = server.client()
        let start = try await client.createList(id: "v", name: "V", sections: ViewFollowTests.initialSections)
        let (process, log) = try Self.watch([
            "\(server.baseURL)/lists/v?where=owner:ann", "--where", "title:a+b & c:é", "--order", "-rank",
            "--group", "done", "--limit", "3", "--poll-timeout", "60",
        ])
        defer {
            kill(process.processIdentifier, SIGINT)
            process.waitUntilExit()
        }
        let view = try ViewSpec(
            parsing: "where=owner:ann&where=title:a%2Bb%20%26%20c%3A%C3%A9&order=-rank&group=done&limit=3")
        let snapshot = try await client.list("v", view: view)
        #expect(!snapshot.sections.isEmpty)
        #expect(
            await log.firstCapture(of: #"(snapshot v version \d+)"#, timeout: .seconds(10))
                == "snapshot v version \(start.version)")
        #expect(await eventually(10) { (try? await server.gauge("listd_parked_waiters")) == 1 })
        // The snapshot printed is the view's: its group sections, its items in its order.
        let printed = log.text.split(separator: "\n").filter { $0.hasPrefix("  ") }.map { line in
            line.split(separator: " ").prefix(line.hasPrefix("    ") ? 4 : 3).joined(separator: " ")
        }
        var expected: [String] = []
        for (index, section) in snapshot.sections.enumerated() {
            expected.append("section \(index) \(section.model.id)")
            for (position, item) in section.items.enumerated() {
                expected.append("item [\(index), \(position)] \(item.id)")
            }
        }
        #expect(printed == expected, "\(log.text)")
        // bob's item is not in the view: no change is printed for it; ann's is.
        let left = try await client.patchList(
            "v",
            [
                .updateItem(
                    id: "i0-1", model: Model(ViewFollowTests.model(done: true, rank: 9, owner: "bob", title: "b")))
            ])
        let changed = try await client.patchList(
            "v",
            [
                .updateItem(
                    id: "i0-4",
                    model: Model(ViewFollowTests.model(done: true, rank: 99, owner: "ann", title: "a+b & c:é")))
            ])
        #expect(
            await log.firstCapture(of: #"(changes v \d+ -> \d+)"#, timeout: .seconds(10))
                == "changes v \(start.version) -> \(changed.to)")
        #expect(!log.text.contains("-> \(left.to)\n"), "\(log.text)")
    }

    @Test func aMalformedViewFlagIsRefusedNamingIt() async throws {
        let (process, log) = try Self.watch(["http://127.0.0.1:1/lists/a", "--order", "a..b"])
        _ = await process.exited()
        await log.finished()
        #expect(process.terminationStatus != 0)
        #expect(log.text.contains("order has an empty field name"), "\(log.text)")
    }

    @Test func urlsOfDifferentListsAreRefused() async throws {
        let (process, log) = try Self.watch(["http://127.0.0.1:1/lists/a", "http://127.0.0.1:2/lists/b"])
        // The exit comes before the pipe's last bytes are read: wait for both.
        _ = await process.exited()
        await log.finished()
        #expect(process.terminationStatus != 0)
        #expect(log.text.contains("every URL must name the same list"), "\(log.text)")
    }

    /// Issue 26: the server takes `timeout` from 0 to 300 (API.md), and the message said
    /// "from 0", yet 0 was refused. A watch with `--poll-timeout 0` asks and hears at once.
    @Test func aPollTimeoutOfZeroIsTaken() async throws {
        let server = try await TestServer()
        defer { server.stop() }
        let client = server.client()
        _ = try await client.createList(id: "z", name: "Z", sections: RandomWriter.initialSections)
        let (process, log) = try Self.watch(["\(server.baseURL)/lists/z", "--poll-timeout", "0"])
        defer {
            kill(process.processIdentifier, SIGINT)
            process.waitUntilExit()
        }
        #expect(await log.firstCapture(of: #"(snapshot z version \d+)"#, timeout: .seconds(10)) != nil, "\(log.text)")
        _ = try await client.patchList("z", [.updateItem(id: "a1", model: 5)])
        #expect(await log.firstCapture(of: #"(update item \[0, 0\] a1 5)"#, timeout: .seconds(10)) != nil)
    }

    @Test(arguments: ["--poll-timeout=-1", "--poll-timeout=300.5", "--poll-timeout=nan"])
    func aPollTimeoutTheServerWouldRefuseIsRefused(flag: String) async throws {
        let (process, log) = try Self.watch(["http://127.0.0.1:1/lists/a", flag])
        _ = await process.exited()
        await log.finished()
        #expect(process.terminationStatus != 0)
        #expect(log.text.contains("--poll-timeout must be a number of seconds from 0 to 300"), "\(log.text)")
    }

    /// Issue 26: an https:// URL was refused as if it were malformed. The watch's transport
    /// (the HTTPClient module) has no TLS: the refusal says that, and what to do instead.
    @Test func anHTTPSURLIsRefusedSayingTheWatchHasNoTLS() async throws {
        let (process, log) = try Self.watch(["https://127.0.0.1:1/lists/a"])
        _ = await process.exited()
        await log.finished()
        #expect(process.terminationStatus != 0)
        #expect(log.text.contains("no TLS"), "\(log.text)")
        #expect(!log.text.contains("the URL must be"), "\(log.text)")
    }

    @Test func aBadURLIsRefused() async throws {
        let (process, _) = try Self.watch(["http://127.0.0.1:1/nolists"])
        _ = await process.exited()
        #expect(process.terminationStatus != 0)
    }
}

/// The runtime image has no libcurl: `listd` (which holds `listd watch`) must not link FoundationNetworking.
@Suite struct LinkageTests {
    @Test func listdDoesNotLinkFoundationNetworking() throws {
        let ldd = URL(fileURLWithPath: "/usr/bin/ldd")
        try #require(FileManager.default.isExecutableFile(atPath: ldd.path), "ldd is needed to read the linkage")
        let (process, reader) = try ChildProcess.piped(ldd, [try ListdBinary.url.path])
        let output = String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(output.contains("libFoundation"), "ldd listed the libraries")
        #expect(!output.contains("FoundationNetworking"))
        #expect(!output.contains("libcurl"))
    }
}
