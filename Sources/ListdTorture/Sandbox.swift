import Foundation
import Glibc

/// The harness's own network, for the partition and slow-link nemeses.
///
/// As root, the harness re-executes itself in a new network and mount namespace
/// (`unshare --net --mount`, util-linux): nothing it does to links is seen outside
/// it, and every namespace and mount it makes goes with it. Inside, each listd
/// instance runs in a network namespace of its own (`ip netns add`, iproute2),
/// joined to the harness's by a veth pair, and for PostgreSQL the server runs in
/// one more namespace, joined to each instance's by a veth pair of its own:
///
///     harness (clients)  127.1.i.1 ──veth c<i>── 127.1.i.2  instance i  127.2.i.2 ──veth d<i>── 127.2.i.1  PostgreSQL
///
/// Every address is a loopback one (127.0.0.0/8): each namespace keeps only
/// 127.0.0.1 as its local loopback address and sets `route_localnet`, so the rest
/// of 127/8 is routed over the veth pairs and nothing can leave the machine.
///
/// - A **partition** takes one end of a pair down: the other end loses its carrier
///   and drops what it is sent, silently, as a cut cable does; existing
///   connections stall rather than fail.
/// - A **slow link** delays every packet with `tc netem`, or, where the kernel has
///   no netem (`sch_netem`), throttles the link with `tc tbf` instead (a queue that
///   delays bursts); the run says which.
///
/// Where `unshare` or `ip netns` is refused (not root, a kernel or sandbox without
/// network namespaces), the run goes on without these nemeses and says why.
final class Sandbox: Sendable {
    /// The instances' namespaces, by index.
    let instanceNamespaces: [String]
    /// PostgreSQL's namespace (nil for SQLite).
    let postgresNamespace: String?
    /// How a slow link is made here: "netem" or "tbf".
    let slowLinkKind: String

    /// The variable that tells a re-executed harness it is inside its namespaces.
    static let marker = "LISTD_TORTURE_SANDBOX"
    private static let ip = "/usr/sbin/ip"
    private static let tc = "/usr/sbin/tc"

    /// As root, outside the sandbox: re-executes this process in new network and
    /// mount namespaces, and does not return. Returns (saying why) where that is
    /// not possible, or when `LISTD_TORTURE_NETWORK=off`.
    static func enter() {
        let environment = ProcessInfo.processInfo.environment
        guard environment[marker] == nil else { return }
        if environment["LISTD_TORTURE_NETWORK"] == "off" {
            say("network nemeses off (LISTD_TORTURE_NETWORK=off)")
            return
        }
        guard getuid() == 0 else {
            say("network nemeses skipped: network namespaces need root (run as root to partition links)")
            return
        }
        let unshare = "/usr/bin/unshare"
        guard FileManager.default.isExecutableFile(atPath: unshare),
            FileManager.default.isExecutableFile(atPath: ip), FileManager.default.isExecutableFile(atPath: tc)
        else {
            say("network nemeses skipped: unshare (util-linux) or ip and tc (iproute2) are not installed")
            return
        }
        let (status, output) = ThrowawayPostgres.run([unshare, "--net", "--mount", "--", ip, "link", "set", "lo", "up"])
        guard status == 0 else {
            say(
                "network nemeses skipped: unshare --net --mount refused ("
                    + output.trimmingCharacters(in: .whitespacesAndNewlines) + ")")
            return
        }
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            say("network nemeses skipped: cannot read /proc/self/exe")
            return
        }
        setenv(marker, "1", 1)
        let arguments = [unshare, "--net", "--mount", "--", executable] + CommandLine.arguments.dropFirst()
        var pointers = arguments.map { strdup($0) } + [nil]
        execv(unshare, &pointers)
        say("network nemeses skipped: exec of unshare failed: \(String(cString: strerror(errno)))")
        unsetenv(marker)
    }

    /// The namespaces and links for `instances` listd instances (and PostgreSQL), or
    /// nil (saying why) outside the sandbox or where one of the steps is refused.
    static func make(instances: Int, postgres: Bool) -> Sandbox? {
        guard ProcessInfo.processInfo.environment[marker] != nil else { return nil }
        let tag = "lt\(getpid())"
        let names = (0..<instances).map { "\(tag)-\($0)" }
        let database = postgres ? "\(tag)-pg" : nil
        var made: [String] = []
        do {
            try prepare(namespace: nil)
            for name in names + [database].compactMap({ $0 }) {
                try step([ip, "netns", "add", name])
                made.append(name)
                try prepare(namespace: name)
            }
            for (index, name) in names.enumerated() {
                try link(
                    "c\(index)", in: nil, address: "127.1.\(index).1", to: "c\(index)n", in: name,
                    address: "127.1.\(index).2")
                if let database {
                    try link(
                        "d\(index)", in: name, address: "127.2.\(index).2", to: "d\(index)p", in: database,
                        address: "127.2.\(index).1")
                }
            }
        } catch {
            say("network nemeses skipped: \(error)")
            for name in made { ThrowawayPostgres.run([ip, "netns", "delete", name]) }
            return nil
        }
        let probe = ThrowawayPostgres.run([tc, "qdisc", "add", "dev", "c0", "root", "netem", "delay", "1ms"])
        let kind: String
        if probe.0 == 0 {
            ThrowawayPostgres.run([tc, "qdisc", "del", "dev", "c0", "root"])
            kind = "netem"
        } else {
            say(
                "slow-link nemesis: tc netem refused ("
                    + probe.1.trimmingCharacters(in: .whitespacesAndNewlines)
                    + "; the kernel has no sch_netem); links are throttled with tc tbf instead of delayed")
            kind = "tbf"
        }
        return Sandbox(instanceNamespaces: names, postgresNamespace: database, slowLinkKind: kind)
    }

    private init(instanceNamespaces: [String], postgresNamespace: String?, slowLinkKind: String) {
        self.instanceNamespaces = instanceNamespaces
        self.postgresNamespace = postgresNamespace
        self.slowLinkKind = slowLinkKind
    }

    /// Instance `index`'s address, as clients reach it.
    func instanceHost(_ index: Int) -> String { "127.1.\(index).2" }

    /// PostgreSQL's address as instance `index` reaches it (over its own link).
    func postgresHost(_ index: Int) -> String { "127.2.\(index).1" }

    /// `url` (PostgreSQL's, on 127.0.0.1) as instance `index` reaches it.
    func postgresURL(_ url: String, _ index: Int) -> String {
        url.replacingOccurrences(of: "@127.0.0.1:", with: "@\(postgresHost(index)):")
    }

    /// Every address PostgreSQL listens on: its own loopback and one per instance link.
    var postgresListenAddresses: String {
        (["127.0.0.1"] + instanceNamespaces.indices.map(postgresHost)).joined(separator: ",")
    }

    /// The command that runs a program in instance `index`'s namespace.
    func launcher(_ index: Int) -> [String] { [Self.ip, "netns", "exec", instanceNamespaces[index]] }

    /// The command that runs a program in PostgreSQL's namespace (none for SQLite).
    var postgresLauncher: [String] { postgresNamespace.map { [Self.ip, "netns", "exec", $0] } ?? [] }

    /// Which of an instance's two links a fault is on.
    enum Link {
        /// Between the clients (the harness) and the instance.
        case clients
        /// Between the instance and PostgreSQL.
        case store
    }

    /// The far end of `link` of instance `index` (taken down for a partition), and its namespace.
    private func farEnd(_ link: Link, _ index: Int) -> (device: String, namespace: String)? {
        switch link {
        case .clients: ("c\(index)n", instanceNamespaces[index])
        case .store: postgresNamespace.map { ("d\(index)p", $0) }
        }
    }

    /// Cuts (`up: false`) or mends `link` of instance `index`.
    func partition(_ link: Link, of index: Int, up: Bool) throws {
        guard let end = farEnd(link, index) else { return }
        try Self.step([Self.ip, "-n", end.namespace, "link", "set", end.device, up ? "up" : "down"])
    }

    /// Slows both ends of `link` of instance `index` (`on`), or restores them.
    func slow(_ link: Link, of index: Int, on: Bool) throws {
        let ends: [(String, String?)] =
            switch link {
            case .clients: [("c\(index)", nil), ("c\(index)n", instanceNamespaces[index])]
            case .store: postgresNamespace.map { [("d\(index)", instanceNamespaces[index]), ("d\(index)p", $0)] } ?? []
            }
        for (device, namespace) in ends {
            let prefix = [Self.tc] + (namespace.map { ["-n", $0] } ?? [])
            if on {
                let discipline =
                    slowLinkKind == "netem"
                    ? ["netem", "delay", "150ms", "50ms"] : ["tbf", "rate", "256kbit", "burst", "8kb", "latency", "2s"]
                try Self.step(prefix + ["qdisc", "replace", "dev", device, "root"] + discipline)
            } else {
                ThrowawayPostgres.run(prefix + ["qdisc", "del", "dev", device, "root"])
            }
        }
    }

    /// Deletes the namespaces (the re-executed process's own namespaces go with it).
    func remove() {
        for name in instanceNamespaces + [postgresNamespace].compactMap({ $0 }) {
            ThrowawayPostgres.run([Self.ip, "netns", "delete", name])
        }
    }

    /// Loopback up; only 127.0.0.1 local, the rest of 127/8 routable (`route_localnet`).
    private static func prepare(namespace: String?) throws {
        let prefix = namespace.map { [ip, "netns", "exec", $0] } ?? []
        try step(
            prefix + [
                "/bin/sh", "-c",
                "for c in all default; do echo 1 > /proc/sys/net/ipv4/conf/$c/route_localnet || exit 1; done",
            ])
        try step(prefix + [ip, "link", "set", "lo", "up"])
        try step(prefix + [ip, "route", "del", "local", "127.0.0.0/8", "dev", "lo", "table", "local"])
        try step(prefix + [ip, "route", "replace", "local", "127.0.0.1", "dev", "lo", "table", "local"])
    }

    /// A veth pair: `first` in `firstNamespace` (nil: the harness's), `second` in `secondNamespace`, each with a /24 address.
    private static func link(
        _ first: String, in firstNamespace: String?, address firstAddress: String, to second: String,
        in secondNamespace: String, address secondAddress: String
    ) throws {
        try step(
            [ip, "link", "add", first] + (firstNamespace.map { ["netns", $0] } ?? []) + [
                "type", "veth", "peer", "name", second, "netns", secondNamespace,
            ])
        for (device, namespace, address) in [
            (first, firstNamespace, firstAddress), (second, Optional(secondNamespace), secondAddress),
        ] {
            let prefix = [ip] + (namespace.map { ["-n", $0] } ?? [])
            try step(prefix + ["addr", "add", "\(address)/24", "dev", device])
            try step(prefix + ["link", "set", device, "up"])
        }
    }

    struct Refused: Error, CustomStringConvertible {
        var description: String
    }

    private static func step(_ arguments: [String]) throws {
        let (status, output) = ThrowawayPostgres.run(arguments)
        guard status == 0 else {
            throw Refused(
                description: "`\(arguments.joined(separator: " "))` refused: "
                    + output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    private func step(_ arguments: [String]) throws { try Self.step(arguments) }
}
