import Foundation
import TortureCore

extension Run {
    /// Runs the plan's faults at their times; returns when all are done and every instance is up.
    func nemeses() async {
        for event in plan.nemeses {
            while ledger.now < event.at {
                if stopping.load(ordering: .relaxed) { return }
                try? await Task.sleep(for: .milliseconds(50))
            }
            say("nemesis \(event)")
            ledger.count("nemesis \(event.kind.rawValue)")
            let start = ledger.now
            do {
                try await fire(event)
            } catch {
                say("nemesis \(event.kind.rawValue) failed: \(error)")
                ledger.count("nemesis failures")
            }
            ledger.history.fault(event.description, from: start, to: ledger.now)
        }
    }

    func fire(_ event: NemesisEvent) async throws {
        let index = event.target
        switch event.kind {
        case .kill, .terminate:
            cluster.stop(index, graceful: event.kind == .terminate)
            try await cluster.start(index)
        case .prune:
            cluster.stop(index, graceful: true)
            ledger.pruned(keeping: 3)
            try await cluster.start(index, extra: ["--history-versions", "3"])
            try await Task.sleep(for: .milliseconds(Int64(event.duration * 1000)))
            cluster.stop(index, graceful: true)
            try await cluster.start(index)
        case .slowReader:
            let until = ledger.now + event.duration
            pausedUntil.withLock { $0[index] = until }
            try await Task.sleep(for: .milliseconds(Int64(event.duration * 1000)))
        case .postgresImmediate:
            guard let postgres = cluster.postgres else { return }
            let outage = outageStarted()
            defer { outageEnded(outage) }
            _ = postgres.stopImmediately()
            try await Task.sleep(for: .milliseconds(Int64(event.duration * 1000)))
            let output = postgres.restart()
            if !output.contains("server started") { say("PostgreSQL restart: \(output)") }
        case .terminateListen:
            let count = cluster.postgres?.terminate(where: "application_name = 'listd-listen'") ?? 0
            ledger.count("LISTEN sessions terminated", count)
        case .diskFull:
            guard let disk = cluster.disk else {
                say("nemesis diskFull skipped: the store is not on a tmpfs the harness mounted")
                ledger.count("nemesis diskFull skipped")
                return
            }
            let start = ledger.now
            fullDisk.withLock { $0.filled(at: start) }
            let bytes = disk.fill()
            ledger.count("disk-full ballast MiB", bytes >> 20)
            try? await Task.sleep(for: .milliseconds(Int64(event.duration * 1000)))
            disk.free()
            let end = ledger.now
            fullDisk.withLock { $0.freed(at: end) }
        case .partitionClients, .partitionStore, .slowLink:
            guard let sandbox = cluster.sandbox else {
                say("nemesis \(event.kind.rawValue) skipped: the harness has no network namespaces (see above)")
                ledger.count("nemesis \(event.kind.rawValue) skipped")
                return
            }
            let links: [Sandbox.Link] =
                switch event.kind {
                case .partitionClients: [.clients]
                case .partitionStore: [.store]
                default: cluster.postgres == nil ? [.clients] : [.clients, .store]
                }
            let window = outageStarted()
            defer { outageEnded(window) }
            for link in links {
                if event.kind == .slowLink {
                    try sandbox.slow(link, of: index, on: true)
                } else {
                    try sandbox.partition(link, of: index, up: false)
                }
            }
            try? await Task.sleep(for: .milliseconds(Int64(event.duration * 1000)))
            for link in links {
                if event.kind == .slowLink {
                    try sandbox.slow(link, of: index, on: false)
                } else {
                    try sandbox.partition(link, of: index, up: true)
                }
            }
        case .terminateSessions:
            let count =
                cluster.postgres?.terminate(
                    where: "backend_type = 'client backend' and application_name not in ('listd-listen', 'psql')") ?? 0
            ledger.count("other sessions terminated", count)
        }
    }
}
