// swift-tools-version:6.1
import PackageDescription

// The module graph is the architecture: each target does one job and depends
// only on targets listed above it. See README.md ("Layout").
let package = Package(
    name: "listd",
    // The floor is Synchronization.Mutex's (ListClient's locks): macOS 15, iOS 18, tvOS 18,
    // watchOS 11, visionOS 2. The server and the tools build on Linux only.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .executable(name: "listd", targets: ["listd"]),
        .executable(name: "listd-torture", targets: ["ListdTorture"]),
        .library(name: "ListClient", targets: ["ListClient", "ListClientNetworking"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        // A command plugin only (`swift package generate-documentation`, `.ci/docs`): no target
        // depends on it, so `swift build` and the server's build never compile it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // MARK: System libraries and C shims
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(name: "CSystem"),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),

        // MARK: Foundations with no dependencies
        .target(name: "ReactiveCore"),
        .target(name: "ReactiveTesting", dependencies: ["ReactiveCore"]),
        .target(name: "SectionDiff"),
        .target(name: "JSON"),
        .target(name: "ListModel", dependencies: ["JSON"]),
        .target(name: "ListWire", dependencies: ["ListModel", "JSON", "SectionDiff"]),
        .target(name: "ListView", dependencies: ["ListModel", "JSON"]),

        // MARK: Storage
        .target(name: "SchemaMigration", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "Storage", dependencies: ["CSQLite", "SchemaMigration"]),
        .target(name: "Postgres", dependencies: ["CLibPQ", "SchemaMigration"]),
        .target(
            name: "ListStore",
            dependencies: [
                "ListModel", "ListWire", "ListView", "SectionDiff", "Storage", "SchemaMigration", "JSON", "CSystem",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        .target(
            name: "PostgresStore",
            dependencies: [
                "ListModel", "ListStore", "Postgres", "Storage", "SchemaMigration",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: HTTP
        .target(name: "HTTP"),
        .target(name: "POSIXIO", dependencies: ["CSystem"]),
        .target(
            name: "Server",
            dependencies: [
                "HTTP", "POSIXIO", "CSystem",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),

        // MARK: The service
        // Signed tokens (JWTs): verifying and minting them; knows nothing of lists or HTTP.
        .target(name: "Tokens", dependencies: [.product(name: "JWTKit", package: "jwt-kit")]),
        .target(
            name: "ListAPI",
            dependencies: [
                "HTTP", "Server", "ListModel", "ListStore", "ListWire", "ListView", "JSON", "SectionDiff",
                "ReactiveCore",
                "Tokens",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        // MARK: The clients (no FoundationNetworking in ListClient: listd links it)
        .target(name: "HTTPClient", dependencies: ["HTTP", "POSIXIO", "CSystem"]),
        // SocketTransport (Linux only: HTTPClient is epoll and Glibc) lives in ListClient, not
        // ListClientNetworking, so `listd watch` gets it without linking FoundationNetworking.
        // HTTPClient's types stay internal to it, so the product needs to list no more targets.
        .target(
            name: "ListClient",
            dependencies: [
                "ReactiveCore", "SectionDiff", "JSON", "ListModel", "ListWire", "ListView",
                .target(name: "HTTPClient", condition: .when(platforms: [.linux])),
                .target(name: "HTTP", condition: .when(platforms: [.linux])),
                .target(name: "POSIXIO", condition: .when(platforms: [.linux])),
            ]
        ),
        .target(name: "ListClientNetworking", dependencies: ["ListClient"]),
        .executableTarget(
            name: "listd",
            dependencies: [
                "ListAPI", "Server", "HTTPClient", "POSIXIO", "HTTP", "ListStore", "Storage", "SchemaMigration",
                "Postgres", "PostgresStore", "ListClient", "ListWire", "SectionDiff", "JSON", "ReactiveCore", "CSystem",
                "Tokens", "ListView",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Benchmarks (release builds only; each folder's README says how to run it)
        .executableTarget(
            name: "DiffBenchmarks",
            dependencies: ["SectionDiff", "ListWire"],
            path: "Benchmarks/DiffBenchmarks",
            exclude: ["README.md"]
        ),
        .executableTarget(name: "JSONBenchmarks", dependencies: ["JSON"], path: "Benchmarks/JSONBenchmarks"),
        .executableTarget(name: "TokenBenchmarks", dependencies: ["Tokens"], path: "Benchmarks/TokenBenchmarks"),
        .executableTarget(
            name: "ViewBenchmarks", dependencies: ["ListView", "ListModel", "JSON"], path: "Benchmarks/ViewBenchmarks",
            exclude: ["README.md"]),
        .executableTarget(
            name: "HTTPBenchmarks",
            dependencies: ["Server", "HTTP", "POSIXIO", "CSystem", .product(name: "Logging", package: "swift-log")],
            path: "Benchmarks/HTTPBenchmarks",
            exclude: ["README.md", "nginx.conf", "body.json", "run.sh"]
        ),
        .executableTarget(
            name: "ReactiveBenchmarks",
            dependencies: ["ReactiveCore"],
            path: "Benchmarks/ReactiveBenchmarks",
            exclude: ["README.md"]
        ),
        .executableTarget(
            name: "RetryBenchmarks",
            dependencies: ["ListClientTestSupport", "ListdTestSupport"],
            path: "Benchmarks/RetryBenchmarks",
            exclude: ["README.md"]
        ),
        .executableTarget(
            name: "OptimisticBenchmarks",
            dependencies: ["ListClient", "ListClientNetworking", "ListdTestSupport", "JSON", "SectionDiff"],
            path: "Benchmarks/OptimisticBenchmarks",
            exclude: ["README.md"]
        ),
        .executableTarget(
            name: "FollowBenchmarks",
            dependencies: [
                "ListClient", "ListClientNetworking", "ListWire", "SectionDiff", "JSON", "ReactiveCore",
                "HTTPClient", "HTTP",
            ],
            path: "Benchmarks/FollowBenchmarks",
            exclude: ["README.md", "compare.sh"]
        ),
        .executableTarget(
            name: "StreamBenchmarks", dependencies: ["ListClient", "ListClientNetworking", "JSON"],
            path: "Benchmarks/StreamBenchmarks", exclude: ["README.md"]),
        .executableTarget(
            name: "ServiceBenchmarks",
            dependencies: ["CSystem"],
            path: "Benchmarks/ServiceBenchmarks",
            exclude: [
                "README.md", "nginx.conf", "run.sh", "cluster-patch.lua", "engine.sh", "cluster.sh", "update.lua",
                "query.sh", "lib.sh", "compare.sh",
                "update-query.lua", "catchup.sh", "writercpu.sh", "nchan.conf", "fanout.sh", "views.sh",
                "update-view.lua",
                "auth.sh", "auth.lua", "update-auth.lua", "idempotency.sh", "update-idempotent.lua", "builds.sh",
            ]
        ),

        // MARK: The seeded fault harness (issue 25; `./dev torture`, README "Torture testing")
        // TortureCore: the plan drawn from a seed and the invariant checks, pure; ListdTorture runs them.
        .target(name: "TortureCore", dependencies: ["ListWire", "SectionDiff", "JSON", "ListdTestSupport"]),
        .executableTarget(
            name: "ListdTorture",
            dependencies: [
                "TortureCore", "ListdTestSupport", "HTTPClient", "HTTP", "POSIXIO", "ListWire", "JSON", "ListClient",
                "ReactiveCore",
            ]
        ),

        // MARK: Examples (built by `swift build`, so the docs' code keeps compiling)
        .executableTarget(
            name: "FollowList",
            dependencies: ["ListClient", "ListClientNetworking", "SectionDiff", "ReactiveCore"],
            path: "Examples/FollowList"
        ),

        // MARK: Tests, one target per module
        .testTarget(name: "ReactiveCoreTests", dependencies: ["ListdTestSupport", "ReactiveCore", "ReactiveTesting"]),
        .testTarget(name: "SectionDiffTests", dependencies: ["ListdTestSupport", "SectionDiff"]),
        .testTarget(name: "JSONTests", dependencies: ["ListdTestSupport", "JSON"]),
        .testTarget(name: "ListModelTests", dependencies: ["ListdTestSupport", "ListModel", "JSON"]),
        .testTarget(
            name: "ListWireTests", dependencies: ["ListdTestSupport", "ListModel", "ListWire", "JSON", "SectionDiff"]),
        .testTarget(name: "ListViewTests", dependencies: ["ListdTestSupport", "ListView", "ListModel", "JSON"]),
        .testTarget(name: "SchemaMigrationTests", dependencies: ["ListdTestSupport", "SchemaMigration"]),
        .testTarget(name: "StorageTests", dependencies: ["ListdTestSupport", "Storage", "SchemaMigration"]),
        .testTarget(name: "PostgresTests", dependencies: ["ListdTestSupport", "Postgres", "SchemaMigration"]),
        .testTarget(
            name: "ListStoreTests",
            dependencies: [
                "ListStore", "PostgresStore", "Storage", "JSON", "SectionDiff", "ListWire", "StoreCrashWriter",
                "ListdTestSupport",
            ]),
        .executableTarget(
            name: "StoreCrashWriter", dependencies: ["ListStore", "PostgresStore"], path: "Tests/StoreCrashWriter"),
        .executableTarget(
            name: "StoreBenchmarks", dependencies: ["ListStore", "PostgresStore"], path: "Benchmarks/StoreBenchmarks",
            exclude: ["README.md"]),
        .testTarget(
            name: "PostgresStoreTests",
            dependencies: ["PostgresStore", "ListStore", "Postgres", "SchemaMigration", "ListdTestSupport"]),
        .testTarget(
            name: "TokensTests",
            dependencies: [
                "Tokens", "ListdTestSupport", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "TortureCoreTests",
            dependencies: [
                "TortureCore", "ListWire", "SectionDiff", "JSON", "ListdTestSupport", "ListView", "ListModel",
            ]),
        .testTarget(name: "HTTPTests", dependencies: ["ListdTestSupport", "HTTP"]),
        .testTarget(name: "POSIXIOTests", dependencies: ["POSIXIO", "CSystem"]),
        .testTarget(name: "ServerTests", dependencies: ["Server", "HTTP", "POSIXIO", "CSystem", "ListdTestSupport"]),
        .testTarget(
            name: "ListAPITests",
            dependencies: [
                "ListdTestSupport", "ListAPI", "HTTP", "Server", "ListStore", "ListWire", "SectionDiff", "JSON",
                "ListView", "ListModel", "Tokens",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]),
        .testTarget(
            name: "ListClientTests",
            dependencies: [
                "ListClient", "ListClientNetworking", "ListWire", "ListView", "listd", "ListdTestSupport",
                "ListClientTestSupport", "OutboxCrashWriter", "SectionDiff",
                "JSON", "ReactiveCore",
            ]
        ),
        .testTarget(
            name: "HTTPClientTests", dependencies: ["HTTPClient", "HTTP", "POSIXIO", "CSystem", "ListdTestSupport"]),
        .testTarget(
            name: "listdTests",
            dependencies: [
                "listd", "ListdTestSupport", "SectionDiff", "ListWire", "JSON", "ListClient", "ListClientNetworking",
                "ReactiveCore", "ListView", "ListModel", "Tokens", .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // The write storm of issue 24 (clients through a FaultProxy), shared by ListClientTests and RetryBenchmarks.
        .target(
            name: "ListClientTestSupport", dependencies: ["ListClient", "ListClientNetworking", "JSON"],
            path: "Tests/ListClientTestSupport"),
        // A child process for the outbox's restart test: queues writes, drains until killed.
        .executableTarget(
            name: "OutboxCrashWriter", dependencies: ["ListClient", "ListClientNetworking"],
            path: "Tests/OutboxCrashWriter"),
        // Starting a real listd for end-to-end tests, shared by the test targets that need it.
        .target(
            name: "ListdTestSupport", dependencies: ["Postgres", "CSystem", "ListWire", "SectionDiff"],
            path: "Tests/ListdTestSupport"),
    ]
)

// MARK: Fuzzers (libFuzzer), only when LISTD_FUZZ is set: `.ci/fuzz` builds them with
// `-sanitize=fuzzer,address` in `.build-fuzz`. See Fuzz/README.md.
if Context.environment["LISTD_FUZZ"] != nil {
    let fuzzer: [SwiftSetting] = [.unsafeFlags(["-parse-as-library"])]
    package.targets += [
        .executableTarget(
            name: "HTTPParserFuzzer", dependencies: ["HTTP"], path: "Fuzz/HTTPParserFuzzer", swiftSettings: fuzzer),
        .executableTarget(name: "JSONFuzzer", dependencies: ["JSON"], path: "Fuzz/JSONFuzzer", swiftSettings: fuzzer),
        .executableTarget(
            name: "OpsFuzzer", dependencies: ["ListAPI", "ListWire", "HTTP", "JSON"], path: "Fuzz/OpsFuzzer",
            swiftSettings: fuzzer),
        .executableTarget(
            name: "TokenFuzzer", dependencies: ["Tokens", .product(name: "Crypto", package: "swift-crypto")],
            path: "Fuzz/TokenFuzzer", swiftSettings: fuzzer),
    ]
}
