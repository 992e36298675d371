import ArgumentParser
import Foundation
import Logging

/// The flags of `listd serve`. Each has an environment variable (named in its
/// help) that is used when the flag is not given; the flag wins.
struct ServeOptions: ParsableArguments {
    @Option(help: "Address to listen on (env: LISTD_HOST; default: 127.0.0.1).")
    var host: String?

    @Option(help: "TCP port; 0 picks a free one (env: LISTD_PORT; default: 8080).")
    var port: Int?

    @Option(help: "SQLite database file, created if missing (env: LISTD_DB; default: ./listd.sqlite).")
    var db: String?

    @Option(
        help:
            "A PostgreSQL database URL, postgres://user@host:port/db, instead of --db: any number of instances may share it (env: LISTD_STORE)."
    )
    var store: String?

    @OptionGroup var storage: StorageOptions

    @Flag(help: "Do not apply pending migrations on start; refuse to start if any are pending (env: LISTD_NO_MIGRATE).")
    var noMigrate = false

    @Option(
        help:
            "durable commits: full (fsync on every commit) or normal (may lose the last commits on power loss) (env: LISTD_SYNCHRONOUS; default: full)."
    )
    var synchronous: SynchronousMode?

    @Option(help: "Event-loop threads (env: LISTD_EVENT_LOOPS; default: the number of cores).")
    var eventLoops: Int?

    @Option(
        help:
            "Most open connections; over it listd answers 503. At most the file-descriptor limit less 64 (env: LISTD_MAX_CONNECTIONS; default: that)."
    )
    var maxConnections: Int?

    @Option(help: "Largest request body in bytes (env: LISTD_MAX_BODY_BYTES; default: 33554432).")
    var maxBodyBytes: Int?

    @Option(help: "Largest model of a section or item in bytes (env: LISTD_MAX_MODEL_BYTES; default: 65536).")
    var maxModelBytes: Int?

    @Option(
        help: ArgumentHelp(
            "Most sections and items one write names: a list body, a PATCH batch, a section with its items "
                + "(env: LISTD_MAX_BODY_ELEMENTS; default: 250000)."))
    var maxBodyElements: Int?

    @Option(
        help:
            "Bytes of memory for the rank indexes of hot lists, about 10 per item (env: LISTD_HOT_LIST_MEMORY; default: 268435456)."
    )
    var hotListMemory: Int?

    @Option(
        help:
            "Bytes of memory for the views kept between answers, about 250 per member plus its model; the least recently used are dropped beyond it (env: LISTD_VIEW_MEMORY; default: 268435456)."
    )
    var viewMemory: Int?

    @Option(help: "Versions of history kept per list for change streams (env: LISTD_HISTORY_VERSIONS; default: 10000).")
    var historyVersions: Int?

    @Option(help: "Oldest history kept, e.g. 7d, 12h; 0 keeps it by count only (env: LISTD_HISTORY_AGE; default: 7d).")
    var historyAge: DurationArgument?

    @Option(
        help:
            "How long Idempotency-Keys and their answers are kept, at least 24h, e.g. 48h, 7d (env: LISTD_IDEMPOTENCY_RETENTION; default: 24h)."
    )
    var idempotencyRetention: DurationArgument?

    @Option(
        help:
            "Bearer token that may read and write; prefer the variable, since flags show in ps (env: LISTD_WRITE_TOKEN)."
    )
    var writeToken: String?

    @Option(help: "Bearer token that may only read (env: LISTD_READ_TOKEN).")
    var readToken: String?

    @Flag(help: "Allow listening on a non-loopback address without a token (env: LISTD_ALLOW_UNAUTHENTICATED).")
    var allowUnauthenticated = false

    @Option(
        help:
            "A file holding the key of signed tokens (JWTs): an HS256 secret, or an Ed25519 public key in PEM (env: LISTD_TOKEN_KEY). See docs/tokens.md."
    )
    var tokenKey: String?

    @Option(
        help:
            "A Host name answered without a token besides loopback names and the bound address, against DNS rebinding; repeatable (env: LISTD_PUBLIC_HOST, comma-separated)."
    )
    var publicHost: [String] = []

    @Option(
        help:
            "The most event streams and long-polls one caller (a signed token's subject, or a non-loopback address without a token) may hold open; 0: no limit (env: LISTD_MAX_WAITS_PER_CALLER; default: 100)."
    )
    var maxWaitsPerCaller: Int?

    @Option(
        help:
            "A web origin (https://app.example) whose pages may call listd, or * for any; repeatable (env: LISTD_CORS_ORIGIN, comma-separated; default: none, no CORS headers)."
    )
    var corsOrigin: [String] = []

    @Option(
        help:
            "How often an idle event stream gets a keep-alive comment, e.g. 15s (env: LISTD_EVENT_HEARTBEAT; default: 15s)."
    )
    var eventHeartbeat: DurationArgument?

    @Option(help: "How long a graceful shutdown waits for requests in flight (env: LISTD_DRAIN_TIMEOUT; default: 10s).")
    var drainTimeout: DurationArgument?

    @Option(
        help:
            "How long an idle keep-alive connection stays open, e.g. 75s; above a load balancer's own idle timeout (env: LISTD_KEEP_ALIVE_TIMEOUT; default: 60s)."
    )
    var keepAliveTimeout: DurationArgument?

    /// For tests of a full disk: the database may grow to this many pages, then writes are 507.
    @Option(help: .hidden)
    var testingMaxDatabasePages: Int64?

    @OptionGroup var logging: LoggingOptions
}

/// Where the SQL migrations are; shared by `serve` and `migrate`.
struct StorageOptions: ParsableArguments {
    @Option(
        help:
            "Folder of NNNN_name.sql migrations (env: LISTD_MIGRATIONS; default: ./Migrations, else beside the binary, else ../share/listd/Migrations from it)."
    )
    var migrations: String?

    /// The migrations folder: the flag or variable if given (it must exist),
    /// else the first default location that exists.
    func migrationsDirectory(_ resolver: EnvironmentResolver) throws -> URL {
        if let given = try resolver.resolve(migrations, "LISTD_MIGRATIONS") {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: given, isDirectory: &isDirectory), isDirectory.boolValue
            else { throw ValidationError("the migrations folder \(given) does not exist") }
            return URL(fileURLWithPath: given)
        }
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        let candidates = [
            URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("Migrations"),
            executable.appendingPathComponent("Migrations"),
            executable.deletingLastPathComponent().appendingPathComponent("share/listd/Migrations"),
        ]
        for candidate in candidates {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), isDirectory.boolValue
            {
                return candidate
            }
        }
        throw ValidationError(
            "no Migrations folder found (looked in \(candidates.map(\.path).joined(separator: ", "))); pass --migrations"
        )
    }
}

/// Logging flags; shared by every command that logs.
struct LoggingOptions: ParsableArguments {
    @Option(help: "trace, debug, info, notice, warning, error or critical (env: LISTD_LOG_LEVEL; default: info).")
    var logLevel: Logger.Level?

    /// Sends swift-log's output to standard error at the chosen level.
    func bootstrap(_ resolver: EnvironmentResolver) throws -> Logger {
        let level = try resolver.resolve(logLevel, "LISTD_LOG_LEVEL", default: .info)
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "listd")
        logger.logLevel = level
        return logger
    }
}

/// SQLite's `synchronous` setting, as the command line spells it.
enum SynchronousMode: String, ExpressibleByArgument, CaseIterable {
    case full, normal
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
