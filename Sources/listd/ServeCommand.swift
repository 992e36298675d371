import ArgumentParser
import CSystem
import CoreMetrics
import Foundation
import HTTP
import ListAPI
import ListStore
import Logging
import POSIXIO
import Postgres
import PostgresStore
import SchemaMigration
import Server
import Storage
import Synchronization
import Tokens

/// `listd serve`: runs the HTTP server on a SQLite file until SIGTERM or SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve lists over HTTP from a SQLite file or a PostgreSQL database.",
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
        var settings = try Settings(options, env)
        if let path = settings.tokenKeyPath {
            let key: TokenKey
            do {
                key = try await TokenKey.load(path: path)
            } catch {
                throw ValidationError("--token-key: \(error)")
            }
            settings.service.accessPolicy = settings.service.accessPolicy.taking(SignedTokens(key: key))
        }
        Self.raiseDescriptorLimit(logger)
        Self.keepFreedMemory(logger)

        // Listen first: a start refused for a busy port must leave nothing on disk. Until the
        // store is open (migrations can take a moment), requests are answered 503.
        let handler = StartingHandler()
        let server = HTTPServer(configuration: settings.server, handler: handler, logger: logger)
        let port: Int
        do {
            port = try server.start()
            try server.installSignalHandlers()
        } catch {
            Self.stop(server)
            throw CommandFailure("cannot listen on \(settings.server.host):\(settings.server.port): \(error)")
        }

        let backend = PrometheusBackend()
        Self.bootstrapMetrics(backend)
        let metrics = ServiceMetrics(factory: backend, exposition: backend.exposition)
        var storeConfiguration = settings.store
        storeConfiguration.onGroupCommit = { writes in metrics.groupCommit(writes: writes) }
        storeConfiguration.onInconsistency = { detail in logger.error("store inconsistency: \(detail)") }
        let opened: OpenedStore
        do {
            if settings.migrate == false {
                try Self.refuseIfPending(settings.migrations, location: settings.location)
            }
            opened = try await OpenedStore.open(settings.location, configuration: storeConfiguration, logger: logger)
        } catch let error as StoreError {
            Self.stop(server)
            throw CommandFailure("cannot open the database \(settings.location.displayName): \(error.detail)")
        } catch {
            Self.stop(server)
            throw error
        }
        let store = opened.store

        let service = ListService(store: store, configuration: settings.service, metrics: metrics, logger: logger)
        server.onShutdown { service.shutdown() }
        metrics.gauge("listd_open_connections") { Double(server.stats.openConnections) }
        metrics.counterFunction("listd_store_writes_total") { Double(opened.counters().writes) }
        metrics.counterFunction("listd_store_commits_total") { Double(opened.counters().commits) }
        handler.ready(service)
        logger.info(
            "listd \(VersionCommand.listdVersion) serving",
            metadata: [
                "address": "http://\(Self.hostForURL(settings.server.host)):\(port)",
                "database": "\(settings.location.displayName)",
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
        await opened.close()
        logger.info("listd stopped")
    }

    /// With --no-migrate, a database that still needs migrations is refused
    /// rather than served with a schema the binary does not expect.
    static func refuseIfPending(_ folder: URL, location: StoreLocation) throws {
        let name = location.displayName
        do {
            let migrator = try Migrator(directory: location.migrations(in: folder))
            let pending: [Migration]
            switch location {
            case .sqlite(let path):
                let connection = try Storage.Connection(path: path)
                defer { connection.close() }
                pending = try migrator.pending(connection)
            case .postgres(let url):
                let connection = try Postgres.Connection(url: url)
                defer { connection.close() }
                pending = try migrator.pending(connection)
            }
            if !pending.isEmpty {
                let flag = if case .sqlite = location { "--db \(name)" } else { "--store \(name)" }
                throw CommandFailure(
                    "\(name) needs migrations \(pending.map(\.identifier).joined(separator: ", ")); "
                        + "run 'listd migrate \(flag)' or start without --no-migrate")
            }
        } catch let error as MigrationError {
            throw CommandFailure("the database \(name) cannot be used: \(error)")
        } catch let error as SQLiteError {
            throw CommandFailure("cannot open the database \(name): \(error)")
        } catch let error as PostgresError {
            throw CommandFailure("cannot open the database \(name): \(error)")
        }
    }

    private static let metricsBootstrapped = Atomic<Bool>(false)

    /// Makes `backend` the process's swift-metrics backend, so libraries that
    /// record through `MetricsSystem` show in `/metrics` too. Once per
    /// process: swift-metrics allows one bootstrap (tests may serve twice).
    static func bootstrapMetrics(_ backend: PrometheusBackend) {
        guard metricsBootstrapped.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            return
        }
        MetricsSystem.bootstrap(backend)
    }

    static func hostForURL(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    /// Stops a server that started but will not serve.
    /// Raises the soft descriptor limit to the hard one, as servers commonly
    /// do: connections, streams and the database all need descriptors, and
    /// the usual soft default (1,024) is far below what one listd can serve.
    /// The connection limit is derived from the result (``HTTPServer``).
    static func raiseDescriptorLimit(_ logger: Logger) {
        guard var limit = try? System.fileLimit(), limit.rlim_cur < limit.rlim_max else { return }
        let before = limit.rlim_cur
        limit.rlim_cur = limit.rlim_max
        if (try? System.setFileLimit(limit)) == nil {
            // An unlimited hard limit cannot be a soft one on Linux (fs.nr_open caps it).
            limit.rlim_cur = min(limit.rlim_max, 1_048_576)
            guard (try? System.setFileLimit(limit)) != nil else { return }
        }
        logger.info("descriptor limit raised", metadata: ["from": "\(before)", "to": "\(limit.rlim_cur)"])
    }

    /// Has glibc's allocator keep freed memory for reuse instead of handing
    /// it back to the kernel at once: a catch-up answer builds and drops
    /// buffers of hundreds of kilobytes on threads of their own, and with the
    /// defaults each was mapped fresh (or its arena shrunk with `madvise`),
    /// so about a tenth of a catch-up thread's time went to page faults.
    /// Blocks up to 32 MiB now come from the arenas, and an arena keeps up to
    /// 64 MiB of free memory at its top. Settings given in `GLIBC_TUNABLES`
    /// (`glibc.malloc.*`) win: then this leaves the allocator alone.
    static func keepFreedMemory(_ logger: Logger) {
        #if canImport(Glibc)
            if let tunables = ProcessInfo.processInfo.environment["GLIBC_TUNABLES"], tunables.contains("malloc") {
                return
            }
            if csystem_set_allocator_thresholds(64 << 20, 32 << 20) != 1 {
                logger.warning("the allocator refused its thresholds; freed memory goes back to the kernel at once")
            }
        #endif
    }

    static func stop(_ server: HTTPServer) {
        server.shutdown(drainTimeout: .zero)
        server.waitUntilStopped()
    }
}

/// The server's handler from the moment listd listens: 503 with `Retry-After` until the store
/// is open, then the service.
final class StartingHandler: HTTPHandler {
    private let service = Mutex<ListService?>(nil)

    func ready(_ service: ListService) { self.service.withLock { $0 = service } }

    func admit(_ head: RequestHead, remoteAddress: String) -> HeadDecision {
        guard let service = service.withLock({ $0 }) else { return .refuse(Self.opening) }
        return service.admit(head, remoteAddress: remoteAddress)
    }

    func handle(_ request: Request, responder: Responder) {
        if let service = service.withLock({ $0 }) {
            service.handle(request, responder: responder)
            return
        }
        responder.respond(Self.opening)
    }

    private static var opening: Response {
        var problem = Problem(
            slug: "service-unavailable", title: "Service Unavailable", status: 503,
            detail: "listd is opening its database; retry in a moment")
        problem.headers = [("Retry-After", String(Int.random(in: 1...3)))]
        return problem.response()
    }

    func errorResponse(status: HTTPStatus, detail: String) -> Response {
        Problem.refused(status: status, detail: detail).response()
    }
}

/// `serve`'s flags and variables, resolved and checked.
struct Settings {
    var location: StoreLocation
    var migrations: URL
    var migrate: Bool
    var store: StoreConfiguration
    var server: ServerConfiguration
    var service: ServiceConfiguration
    var historyAgeText: String
    /// `--token-key`: the file of the signed tokens' key, loaded before listening.
    var tokenKeyPath: String?

    init(_ options: ServeOptions, _ env: EnvironmentResolver) throws {
        let host = try env.resolve(options.host, "LISTD_HOST", default: "127.0.0.1")
        let port = try env.resolve(options.port, "LISTD_PORT", default: 8080)
        guard (0...65_535).contains(port) else {
            throw ValidationError("the port must be from 0 to 65535, got \(port)")
        }
        location = try StoreLocation.resolve(store: options.store, db: options.db, env)
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
        let idempotencyRetention = try env.resolve(
            options.idempotencyRetention, "LISTD_IDEMPOTENCY_RETENTION",
            default: DurationArgument(.seconds(86_400), description: "24h"))
        guard idempotencyRetention.duration >= .seconds(86_400) else {
            throw ValidationError(
                "--idempotency-retention must be at least 24h (the contract keeps answers that long), got \(idempotencyRetention)"
            )
        }
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
        store.idempotencyRetention = idempotencyRetention.duration
        if let pages = options.testingMaxDatabasePages {
            guard pages >= 1 else { throw ValidationError("--testing-max-database-pages must be at least 1") }
            store.maxDatabasePages = pages
        }

        let writeToken = try env.resolve(options.writeToken, "LISTD_WRITE_TOKEN")
        let readToken = try env.resolve(options.readToken, "LISTD_READ_TOKEN")
        if let problem = AccessPolicy.validationFailure(writeToken: writeToken, readToken: readToken) {
            throw ValidationError("bad tokens: \(problem)")
        }
        tokenKeyPath = try env.resolve(options.tokenKey, "LISTD_TOKEN_KEY").flatMap { $0.isEmpty ? nil : $0 }
        let allowOpen = try env.resolveFlag(options.allowUnauthenticated, "LISTD_ALLOW_UNAUTHENTICATED")
        if writeToken == nil, tokenKeyPath == nil, !Self.isLoopback(host), !allowOpen {
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
        let keepAlive = try env.resolve(
            options.keepAliveTimeout, "LISTD_KEEP_ALIVE_TIMEOUT",
            default: DurationArgument(.seconds(60), description: "60s"))
        guard keepAlive.duration > .zero else {
            throw ValidationError("--keep-alive-timeout must be more than 0, not \(keepAlive.description)")
        }
        server.keepAliveIdleTimeout = keepAlive.duration
        self.server = server

        service = ServiceConfiguration(
            accessPolicy: AccessPolicy(writeToken: writeToken, readToken: readToken), maxBodyBytes: maxBody)
        let viewMemory = try env.resolve(options.viewMemory, "LISTD_VIEW_MEMORY", default: 256 << 20)
        guard viewMemory >= 0 else { throw ValidationError("--view-memory must be at least 0") }
        service.viewMemory = viewMemory
        service.history = (Int64(historyVersions), historyAge.duration)
        var origins = options.corsOrigin
        if origins.isEmpty, let variable = env.environment["LISTD_CORS_ORIGIN"] {
            origins = variable.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
        }
        for origin in origins {
            if let problem = CORSPolicy.validationFailure(origin) { throw ValidationError("--cors-origin: \(problem)") }
        }
        service.cors = CORSPolicy(origins: origins)
        var publicHosts = options.publicHost
        if publicHosts.isEmpty, let variable = env.environment["LISTD_PUBLIC_HOST"] {
            publicHosts = variable.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
        }
        for name in publicHosts where name.isEmpty || name.contains(where: { $0 == "/" || $0 == " " || $0 == "@" }) {
            throw ValidationError("--public-host: \"\(name)\" is not a host name")
        }
        service.hosts = HostAllowList(boundHost: host, publicHosts: publicHosts)
        let maxWaits = try env.resolve(options.maxWaitsPerCaller, "LISTD_MAX_WAITS_PER_CALLER", default: 100)
        guard maxWaits >= 0 else { throw ValidationError("--max-waits-per-caller must be at least 0") }
        service.maxWaitsPerCaller = maxWaits
        let heartbeat = try env.resolve(
            options.eventHeartbeat, "LISTD_EVENT_HEARTBEAT", default: DurationArgument(.seconds(15), description: "15s")
        ).duration
        guard heartbeat >= .milliseconds(10) else { throw ValidationError("--event-heartbeat must be at least 10ms") }
        service.eventHeartbeat = heartbeat
    }

    /// Whether `host` names only this machine.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
