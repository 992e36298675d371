import Foundation
import Glibc
import ListdTestSupport
import Synchronization
import TortureCore

/// The listd instances of a run (and its throwaway PostgreSQL), started,
/// killed and restarted by the nemeses on fixed ports.
final class Cluster: Sendable {
    let store: TortureStore
    let postgres: ThrowawayPostgres?
    /// The tmpfs the SQLite store lives on (nil on PostgreSQL, or where mounting is refused).
    let disk: Disk?
    /// The namespaces and links of the network nemeses (nil where they are skipped).
    let sandbox: Sandbox?
    private let processes: Mutex<[ListdProcess?]>
    private let fixedPorts: Mutex<[Int]>
    /// Instance i is up (followers and writers pick among these).
    private let up: Mutex<[Bool]>

    init(store: TortureStore, instances: Int) async throws {
        self.store = store
        let sandbox = Sandbox.make(instances: instances, postgres: store == .postgres)
        self.sandbox = sandbox
        if let sandbox { Teardown.add { sandbox.remove() } }
        let postgres =
            store == .postgres
            ? try ThrowawayPostgres(
                launcher: sandbox?.postgresLauncher ?? [], listen: sandbox?.postgresListenAddresses ?? "127.0.0.1")
            : nil
        self.postgres = postgres
        if let postgres { Teardown.add { postgres.stop() } }
        disk = store == .sqlite ? Disk.mount(megabytes: 256) : nil
        processes = Mutex(Array(repeating: nil, count: instances))
        fixedPorts = Mutex(Array(repeating: 0, count: instances))
        up = Mutex(Array(repeating: false, count: instances))
        Teardown.add { [self] in stopInstances() }
        for index in 0..<instances { try await start(index) }
    }

    var count: Int { up.withLock { $0.count } }

    /// Where clients reach instance `index`.
    func endpoint(_ index: Int) -> Endpoint {
        Endpoint(host: sandbox?.instanceHost(index) ?? "127.0.0.1", port: fixedPorts.withLock { $0[index] })
    }

    /// The endpoint of instance `index`, or of the next instance that is up.
    func liveEndpoint(_ index: Int) -> Endpoint {
        let states = up.withLock { $0 }
        for offset in 0..<states.count where states[(index + offset) % states.count] {
            return endpoint((index + offset) % states.count)
        }
        return endpoint(index % states.count)
    }

    /// Starts instance `index` (on its port after the first start, on its SQLite file).
    func start(_ index: Int, extra: [String] = []) async throws {
        let previous = processes.withLock { $0[index] }
        let port = fixedPorts.withLock { $0[index] }
        var attempt = 0
        while true {
            do {
                // The last --db wins: the store on the tmpfs, when there is one.
                let process = try await ListdProcess(
                    (disk.map { ["--db", "\($0.path)/listd.sqlite"] } ?? []) + extra, port: port, reusing: previous,
                    store: postgres.map { sandbox?.postgresURL($0.url, index) ?? $0.url },
                    host: sandbox?.instanceHost(index) ?? "127.0.0.1", launcher: sandbox?.launcher(index) ?? [])
                processes.withLock { $0[index] = process }
                fixedPorts.withLock { $0[index] = process.port }
                up.withLock { $0[index] = true }
                return
            } catch {
                attempt += 1
                if attempt >= 20 { throw error }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    /// `kill -9` (or SIGTERM when `graceful`) of instance `index`, waiting for its exit.
    func stop(_ index: Int, graceful: Bool) {
        up.withLock { $0[index] = false }
        guard let process = processes.withLock({ $0[index] }) else { return }
        if process.process.isRunning {
            Glibc.kill(process.process.processIdentifier, graceful ? SIGTERM : SIGKILL)
        }
        process.process.waitUntilExit()
    }

    /// Stops every instance and PostgreSQL, removing their files, unmounts the
    /// tmpfs and deletes the network namespaces (what ``Teardown`` would do at exit).
    func shutdown() { Teardown.run() }

    /// Stops every instance that is running, removing its files.
    private func stopInstances() {
        up.withLock { $0 = $0.map { _ in false } }
        let all = processes.withLock { $0 }
        for process in all.compactMap({ $0 }) { process.stop(removeFiles: true) }
    }
}

/// A PostgreSQL in a temporary folder, started with `.ci/postgres`, and the
/// nemeses that act on it (`pg_ctl -m immediate`, `pg_terminate_backend`).
final class ThrowawayPostgres: Sendable {
    let url: String
    let directory: String
    let repository: URL
    /// The command PostgreSQL's programs run under (its network namespace), or none.
    let launcher: [String]
    /// `listen_addresses`.
    let listen: String

    init(launcher: [String], listen: String) throws {
        self.launcher = launcher
        self.listen = listen
        repository = ListdProcess.migrations.deletingLastPathComponent()
        directory = "/tmp/listd-torture-postgres-\(getpid())"
        let (status, output) = Self.run(
            launcher + [repository.appendingPathComponent(".ci/postgres").path, "start"],
            environment: ["LISTD_POSTGRES_DIR": directory, "LISTD_POSTGRES_LISTEN": listen])
        guard status == 0, let line = output.split(separator: "\n").last else {
            throw TestFailure("could not start PostgreSQL with .ci/postgres: \(output)")
        }
        url = String(line)
    }

    private var binDirectory: String {
        let base = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        return "\(base)/\(versions.sorted { $0.compare($1, options: .numeric) == .orderedAscending }.last ?? "15")/bin"
    }

    private var port: String { url.split(separator: ":").last?.split(separator: "/").first.map(String.init) ?? "" }

    private func asOwner(_ arguments: [String]) -> (Int32, String) {
        Self.run(launcher + (getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []) + arguments)
    }

    /// `pg_ctl -m immediate stop`: no shutdown checkpoint, every session cut.
    func stopImmediately() -> String {
        asOwner(["\(binDirectory)/pg_ctl", "-D", "\(directory)/data", "-m", "immediate", "-w", "stop"]).1
    }

    /// Starts the stopped server again on its port.
    func restart() -> String {
        let options =
            "-c listen_addresses=\(listen) -p \(port) -c unix_socket_directories=\(directory) -c max_connections=300"
        return asOwner([
            "\(binDirectory)/pg_ctl", "-D", "\(directory)/data", "-l", "\(directory)/server.log", "-w", "-t", "60",
            "start", "-o", options,
        ]).1
    }

    /// `pg_terminate_backend` of the sessions `condition` selects in pg_stat_activity; returns how many.
    func terminate(where condition: String) -> Int {
        let sql =
            "select count(pg_terminate_backend(pid)) from pg_stat_activity where pid <> pg_backend_pid() "
            + "and datname = current_database() and (\(condition))"
        let (_, output) = Self.run(launcher + ["/usr/bin/psql", url, "-At", "-c", sql])
        return Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    func stop() {
        _ = Self.run(
            launcher + [repository.appendingPathComponent(".ci/postgres").path, "stop"],
            environment: ["LISTD_POSTGRES_DIR": directory])
    }

    /// Runs `arguments` (with `environment` added) through `/bin/sh`, its output to a file:
    /// the PostgreSQL server pg_ctl starts inherits the descriptors, so a pipe
    /// would never reach its end, and Foundation's Process did not see that child exit.
    @discardableResult
    static func run(_ arguments: [String], environment: [String: String] = [:]) -> (Int32, String) {
        func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("listd-torture-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let assignments = environment.map { "\($0.key)=\(quoted($0.value))" }
        let command =
            (assignments + arguments.map(quoted)).joined(separator: " ") + " >\(quoted(file.path)) 2>&1 </dev/null"
        let status = system(command)
        let data = (try? Data(contentsOf: file)) ?? Data()
        return (status, String(decoding: data, as: UTF8.self))
    }
}
