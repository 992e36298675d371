import ArgumentParser
import ListdTestSupport
import Testing

@testable import listd

/// `--keep-alive-timeout`: how long listd keeps an idle persistent connection.
@Suite struct KeepAliveTimeoutTests {
    func settings(_ arguments: [String], _ environment: [String: String] = [:]) throws -> Settings {
        let options = try ServeOptions.parse(arguments + ["--migrations", ListdProcess.migrations.path])
        return try Settings(options, EnvironmentResolver(environment: environment))
    }

    @Test func fromTheFlagOrTheVariableAndNeverZero() throws {
        #expect(try settings([]).server.keepAliveIdleTimeout == .seconds(60))
        #expect(try settings(["--keep-alive-timeout", "75s"]).server.keepAliveIdleTimeout == .seconds(75))
        #expect(try settings([], ["LISTD_KEEP_ALIVE_TIMEOUT": "2m"]).server.keepAliveIdleTimeout == .seconds(120))
        #expect(throws: ValidationError.self) { try settings(["--keep-alive-timeout", "0"]) }
        #expect(throws: (any Error).self) { try settings(["--keep-alive-timeout", "soon"]) }
    }

    /// An idle connection is closed once its timeout passes; one on a server
    /// with a longer timeout, idle as long, is still served.
    @Test func anIdleConnectionIsClosedAfterTheTimeout() async throws {
        let short = try await ListdProcess(["--keep-alive-timeout", "1s"])
        defer { short.stop() }
        let long = try await ListdProcess(["--keep-alive-timeout", "1h"])
        defer { long.stop() }
        let kept = try RawConnection(port: long.port)
        #expect(try await kept.get("/healthz").status == 200)
        let idle = try RawConnection(port: short.port)
        // From before the request: under load this task may resume only after the close.
        let started = ContinuousClock.now
        #expect(try await idle.get("/healthz").status == 200)
        #expect(await idle.closedByPeer())
        #expect(ContinuousClock.now - started >= .milliseconds(900))
        #expect(try await kept.get("/healthz").status == 200)
    }
}
