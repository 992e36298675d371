import ArgumentParser
import Foundation
import HTTP
import ListAPI
import ListStore
import Logging
import Server
import Storage

/// `listd serve`: runs the HTTP server on a SQLite file until SIGTERM or SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve lists over HTTP from a SQLite file.",
        discussion: """
            Every flag can also be set with the environment variable named in its \
            help; the flag wins. Pending migrations are applied on start unless \
            --no-migrate is given. SIGTERM or SIGINT drains: parked long-polls are \
            answered at once, requests in flight finish, then listd exits.
            """
    )

    @OptionGroup var options: ServeOptions

    func run() async throws {
        let env = EnvironmentResolver()
        let logger = try options.logging.bootstrap(env)
        let settings = try Settings(options, env)

        let metrics = ServiceMetrics()
        var storeConfiguration = settings.store
        storeConfiguration.onGroupCommit = { writes in metrics.groupCommitSize.observe(Double(writes)) }
        let store: SQLiteStore
        do {
            if settings.migrate == false {
                try Self.refuseIfPending(settings.migrations, database: settings.database)
            }
            store = try await SQLiteStore(path: settings.database, configuration: storeConfiguration)
        } catch let error as StoreError {
            throw CommandFailure("cannot open the database \(settings.database): \(error.detail)")
        }

        let service = ListService(store: store, configuration: settings.service, metrics: metrics, logger: logger)
        let server = HTTPServer(configuration: settings.server, handler: service, logger: logger)
        server.onShutdown { service.shutdown() }
        service.metrics.gauge("listd_open_connections", help: "Open HTTP connections.") {
            Double(server.stats.openConnections)
        }
        metrics.counterFunction("listd_store_writes_total", help: "Writes committed since start.") {
            Double(store.counters.writes)
        }
        metrics.counterFunction("listd_store_commits_total", help: "Group commits (transactions, fsyncs) since start.") {
            Double(store.counters.commits)
        }

        let port: Int
        do {
            port = try server.start()
            try server.installSignalHandlers()
        } catch {
            await store.close()
            throw CommandFailure("cannot listen on \(settings.server.host):\(settings.server.port): \(error)")
        }
        logger.info(
            "listd \(VersionCommand.listdVersion) serving",
            metadata: [
                "address": "http://\(Self.hostForURL(settings.server.host)):\(port)",
                "database": "\(settings.database)",
                "synchronous": "\(settings.store.fullSync ? "full" : "normal")",
                "history": "\(settings.store.historyVersions) versions, \(settings.historyAgeText)",
                "event_loops": "\(settings.server.eventLoops)",
                "auth": "\(settings.service.accessPolicy)",
            ])

        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                server.waitUntilStopped()
                continuation.resume()
            }
        }
        await store.close()
        logger.info("listd stopped")
    }

    /// With --no-migrate, a database that still needs migrations is refused
    /// rather than served with a schema the binary does not expect.
    static func refuseIfPending(_ directory: URL, database: String) throws {
        do {
            let connection = try Connection(path: database)
            defer { connection.close() }
            let pending = try Migrator(directory: directory).pending(connection)
            if !pending.isEmpty {
                throw CommandFailure(
                    "\(database) needs migrations \(pending.map(\.identifier).joined(separator: ", ")); "
                        + "run 'listd migrate --db \(database)' or start without --no-migrate")
            }
        } catch let error as MigrationError {
            throw CommandFailure("the database \(database) cannot be used: \(error)")
        } catch let error as SQLiteError {
            throw CommandFailure("cannot open the database \(database): \(error)")
        }
    }

    static func hostForURL(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }
}

/// `serve`'s flags and variables, resolved and checked.
struct Settings {
    var database: String
    var migrations: URL
    var migrate: Bool
    var store: StoreConfiguration
    var server: ServerConfiguration
    var service: ServiceConfiguration
    var historyAgeText: String

    init(_ options: ServeOptions, _ env: EnvironmentResolver) throws {
        let host = try env.resolve(options.host, "LISTD_HOST", default: "127.0.0.1")
        let port = try env.resolve(options.port, "LISTD_PORT", default: 8080)
        guard (0...65_535).contains(port) else { throw ValidationError("the port must be from 0 to 65535, got \(port)") }
        database = try env.resolve(options.db, "LISTD_DB", default: "listd.sqlite")
        migrations = try options.storage.migrationsDirectory(env)
        migrate = try !env.resolveFlag(options.noMigrate, "LISTD_NO_MIGRATE")

        let synchronous = try env.resolve(options.synchronous, "LISTD_SYNCHRONOUS", default: .full)
        let maxBody = try env.resolve(options.maxBodyBytes, "LISTD_MAX_BODY_BYTES", default: 32 * 1024 * 1024)
        let maxBodyElements = try env.resolve(options.maxBodyElements, "LISTD_MAX_BODY_ELEMENTS", default: 250_000)
        let hotListMemory = try env.resolve(options.hotListMemory, "LISTD_HOT_LIST_MEMORY", default: 256 << 20)
        guard maxBodyElements >= 1 else { throw ValidationError("--max-body-elements must be at least 1") }
        guard hotListMemory >= 0 else { throw ValidationError("--hot-list-memory must be at least 0") }
        let maxModel = try env.resolve(options.maxModelBytes, "LISTD_MAX_MODEL_BYTES", default: 64 * 1024)
        let historyVersions = try env.resolve(options.historyVersions, "LISTD_HISTORY_VERSIONS", default: 10_000)
        let historyAge = try env.resolve(
            options.historyAge, "LISTD_HISTORY_AGE", default: DurationArgument(.seconds(7 * 86_400), description: "7d"))
        guard maxBody >= 1024 else { throw ValidationError("--max-body-bytes must be at least 1024") }
        guard maxModel >= 2, maxModel <= maxBody else {
            throw ValidationError("--max-model-bytes must be from 2 to --max-body-bytes (\(maxBody))")
        }
        guard historyVersions >= 1 else { throw ValidationError("--history-versions must be at least 1") }
        historyAgeText = historyAge.duration == .zero ? "no age limit" : "at most \(historyAge)"
        store = StoreConfiguration(
            migrationsDirectory: migrate ? migrations : nil,
            fullSync: synchronous == .full,
            maxModelBytes: maxModel,
            historyVersions: Int64(historyVersions),
            // 0 means "by count only": a century is as good as forever here.
            historyAge: historyAge.duration == .zero ? .seconds(100 * 365 * 86_400) : historyAge.duration,
            maxBodyElements: maxBodyElements,
            hotListMemory: hotListMemory)

        let writeToken = try env.resolve(options.writeToken, "LISTD_WRITE_TOKEN")
        let readToken = try env.resolve(options.readToken, "LISTD_READ_TOKEN")
        if let problem = AccessPolicy.validationFailure(writeToken: writeToken, readToken: readToken) {
            throw ValidationError("bad tokens: \(problem)")
        }
        let allowOpen = try env.resolveFlag(options.allowUnauthenticated, "LISTD_ALLOW_UNAUTHENTICATED")
        if writeToken == nil, !Self.isLoopback(host), !allowOpen {
            throw ValidationError(
                "refusing to listen on \(host) without a token: anyone who can reach it could change every list. "
                    + "Set LISTD_WRITE_TOKEN (and LISTD_READ_TOKEN), or pass --allow-unauthenticated "
                    + "if something in front of listd authenticates.")
        }

        var server = ServerConfiguration(host: host, port: port)
        if let loops = try env.resolve(options.eventLoops, "LISTD_EVENT_LOOPS") {
            guard (1...256).contains(loops) else { throw ValidationError("--event-loops must be from 1 to 256") }
            server.eventLoops = loops
        }
        if let maxConnections = try env.resolve(options.maxConnections, "LISTD_MAX_CONNECTIONS") {
            guard maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1") }
            server.maxConnections = maxConnections
        }
        server.limits = HTTPLimits(maxBodyBytes: maxBody)
        server.drainTimeout = try env.resolve(
            options.drainTimeout, "LISTD_DRAIN_TIMEOUT", default: DurationArgument(.seconds(10), description: "10s")
        ).duration
        self.server = server

        service = ServiceConfiguration(
            accessPolicy: AccessPolicy(writeToken: writeToken, readToken: readToken), maxBodyBytes: maxBody)
    }

    /// Whether `host` names only this machine.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
