// swift-tools-version:6.1
import PackageDescription

// The module graph is the architecture: each target does one job and depends
// only on targets listed above it. See README.md ("Layout").
let package = Package(
    name: "listd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "listd", targets: ["listd"]),
        .library(name: "ListClient", targets: ["ListClient", "ListClientNetworking"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
    ],
    targets: [
        // MARK: System libraries and C shims
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(name: "CSystem"),

        // MARK: Foundations with no dependencies
        .target(name: "ReactiveCore"),
        .target(name: "SectionDiff"),
        .target(name: "JSON"),

        // MARK: Storage
        .target(name: "Storage", dependencies: ["CSQLite"]),
        .target(
            name: "ListStore",
            dependencies: [
                "Storage", "JSON",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: HTTP
        .target(name: "HTTP"),
        .target(
            name: "Server",
            dependencies: [
                "HTTP", "CSystem", "JSON",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),

        // MARK: The service
        .target(
            name: "ListAPI",
            dependencies: [
                "HTTP", "Server", "ListStore", "JSON", "SectionDiff", "ReactiveCore",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // MARK: The client (no FoundationNetworking in ListClient: listd links it)
        .target(name: "ListClient", dependencies: ["ReactiveCore", "SectionDiff", "JSON"]),
        .target(name: "ListClientNetworking", dependencies: ["ListClient"]),
        .executableTarget(
            name: "listd",
            dependencies: [
                "ListAPI", "Server", "ListStore", "Storage", "ListClient", "SectionDiff", "JSON", "ReactiveCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Benchmarks (release builds only; each folder's README says how to run it)
        .executableTarget(
            name: "DiffBenchmarks",
            dependencies: ["SectionDiff"],
            path: "Benchmarks/DiffBenchmarks",
            exclude: ["README.md"]
        ),
        .executableTarget(name: "JSONBenchmarks", dependencies: ["JSON"], path: "Benchmarks/JSONBenchmarks"),
        .executableTarget(
            name: "HTTPBenchmarks",
            dependencies: ["Server", "HTTP", "CSystem", .product(name: "Logging", package: "swift-log")],
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
            name: "FollowBenchmarks",
            dependencies: ["ListClient", "ListClientNetworking", "SectionDiff", "JSON", "ReactiveCore"],
            path: "Benchmarks/FollowBenchmarks",
            exclude: ["README.md"]
        ),
        .executableTarget(
            name: "ServiceBenchmarks",
            dependencies: ["CSystem"],
            path: "Benchmarks/ServiceBenchmarks",
            exclude: ["README.md", "nginx.conf", "run.sh", "engine.sh", "update.lua"]
        ),

        // MARK: Examples (built by `swift build`, so the docs' code keeps compiling)
        .executableTarget(
            name: "FollowList",
            dependencies: ["ListClient", "ListClientNetworking", "SectionDiff", "ReactiveCore"],
            path: "Examples/FollowList"
        ),

        // MARK: Tests, one target per module
        .testTarget(name: "ReactiveCoreTests", dependencies: ["ListdTestSupport", "ReactiveCore"]),
        .testTarget(name: "SectionDiffTests", dependencies: ["ListdTestSupport", "SectionDiff"]),
        .testTarget(name: "JSONTests", dependencies: ["ListdTestSupport", "JSON"]),
        .testTarget(name: "StorageTests", dependencies: ["ListdTestSupport", "Storage"]),
        .testTarget(
            name: "ListStoreTests",
            dependencies: ["ListStore", "Storage", "JSON", "SectionDiff", "StoreCrashWriter", "ListdTestSupport"]),
        .executableTarget(name: "StoreCrashWriter", dependencies: ["ListStore"], path: "Tests/StoreCrashWriter"),
        .executableTarget(
            name: "StoreBenchmarks", dependencies: ["ListStore"], path: "Benchmarks/StoreBenchmarks",
            exclude: ["README.md"]),
        .testTarget(name: "HTTPTests", dependencies: ["ListdTestSupport", "HTTP"]),
        .testTarget(name: "ServerTests", dependencies: ["Server", "HTTP", "CSystem", "ListdTestSupport"]),
        .testTarget(name: "ListAPITests", dependencies: ["ListdTestSupport", "ListAPI", "HTTP", "ListStore", "SectionDiff", "JSON"]),
        .testTarget(
            name: "ListClientTests",
            dependencies: [
                "ListClient", "ListClientNetworking", "Server", "listd", "ListdTestSupport", "SectionDiff", "JSON",
                "ReactiveCore",
            ]
        ),
        .testTarget(name: "listdTests", dependencies: ["listd", "ListdTestSupport", "SectionDiff", "JSON"]),
        // Starting a real listd for end-to-end tests, shared by the test targets that need it.
        .target(name: "ListdTestSupport", path: "Tests/ListdTestSupport"),
    ]
)
